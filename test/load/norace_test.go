//go:build integration && !race

package load

const raceBuild = false
