//go:build !unix

package vault

// openFlags is empty where O_NOFOLLOW and O_NONBLOCK do not exist: readFile still
// refuses a listed link or special file before opening it, and checks the opened file.
const openFlags = 0

func isLinkError(error) bool { return false }
