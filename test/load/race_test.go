//go:build integration && race

package load

// raceBuild: `go test -race` builds the plugin binary with the race detector as well.
const raceBuild = true
