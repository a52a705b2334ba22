// Package docs holds the test that keeps the documentation's links working: every relative link
// in README.md, CONTRIBUTING.md and docs/**/*.md names a file or folder of the repository, and
// the #anchor it names, if any, is a heading of that page as GitHub slugs it (or an explicit
// <a id>). The package has no code of its own; the test runs with the unit tests
// (scripts/test.sh runs go test ./internal/...).
package docs
