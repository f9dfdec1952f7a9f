// Package countersign carries the repository's default policy into the binary,
// so that "countersign init" writes the file a clone has, word for word, wherever the
// binary was installed from.
package countersign

import _ "embed"

// DefaultPolicy is the text of policies.yaml: the tools of a first bot, each
// commit behind a tap, and the comments that explain every key.
//
//go:embed policies.yaml
var DefaultPolicy []byte
