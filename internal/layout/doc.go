// Package layout holds the checks that keep docs/design.md's package table
// ("Packages, one job each") and the Go files true to the code: every package
// of the module has a row, a row's "imports of the module" are what its
// packages import, a package imports only packages in rows above its own (or
// in its own row), the judge's column says which packages conformance may
// use, and a Go file over 400 lines says why at its top. It has no code; its
// tests run go list and read the files.
package layout
