//go:build !cgo

package sqlstore

// The store's SQLite (github.com/mattn/go-sqlite3) is C, built with cgo, which
// needs a C compiler. Without one Go turns cgo off, and the driver would build
// and then fail at the first open; this stops the build instead, with an error
// that names what is missing.
var _ = Countersign_needs_a_C_compiler_for_SQLite__install_gcc_then_build_again_with_CGO_ENABLED_1
