//go:build dexupgradeprobe

package session

// upgradeProbe: see upgradeprobe.go.
const upgradeProbe = true
