//go:build dexupgradeprobe

package sessionflow

// upgradeProbe: see upgradeprobe.go.
const upgradeProbe = true
