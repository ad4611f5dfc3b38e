//go:build !dexupgradeprobe

package sessionflow

// upgradeProbe is false in every real build. The upgrade test builds a
// second worker with the tag dexupgradeprobe, whose workflow code records
// one more marker at every turn start: new workflow code that cannot
// replay an old run's history, so the test shows that no old run reaches
// it (internal/e2e TestUpgradeAtTurnBoundary).
const upgradeProbe = false
