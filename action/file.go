package action

import "fmt"

// The kinds of file a payload sends.
const (
	FilePhoto    = "photo"
	FileDocument = "document"
)

// File is one file a payload sends, named by its content: its bytes were read
// at prepare time and kept in a FileStore under their SHA-256, which the
// payload's hash covers. An approval of photo A can never send photo B, even
// when the path or the address it came from holds B by the time it is sent.
type File struct {
	Kind   string `json:"kind"` // FilePhoto, FileDocument
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	MIME   string `json:"mime,omitempty"`
	// Source is where the bytes were read from (a path, an address, a chat
	// attachment), for the approver; the bytes sent are the stored ones.
	Source string `json:"source,omitempty"`
	// Caption is an album item's own caption; a single file's is the
	// payload's text.
	Caption string `json:"caption,omitempty"`
}

// Describe is the file in one line for an approver: kind, name, size, the
// first 12 hex digits of its SHA-256, and where it was read from.
func (f File) Describe() string {
	s := fmt.Sprintf("%s %q, %s, sha256 %s", f.Kind, f.Name, Size(f.Size), prefix(f.SHA256, 12))
	if f.Source != "" {
		s += ", read from " + f.Source
	}
	return s
}

// Size is n bytes for a person: 512 B, 3.4 KB, 12.0 MB.
func Size(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
