package review

import (
	"strings"
	"unicode"
)

// A Change is one run of a diff: text both sides hold, or text the edit takes
// out or puts in.
type Change struct {
	Op   string // "same", "del", "ins"
	Text string
}

// maxDiffCells bounds the table a word diff fills; beyond it the diff is by
// lines, and beyond that whole (all taken out, all put in).
const maxDiffCells = 4 << 20

// Diff is the change from before to after, by words (a word and the spaces
// after it), by lines when the texts are too long for words: what an
// approver reads of an edit. Joined, the "same" and "del" runs are before, the
// "same" and "ins" runs after.
func Diff(before, after string) []Change {
	a, b := words(before), words(after)
	if len(a)*len(b) > maxDiffCells {
		a, b = lines(before), lines(after)
	}
	if len(a)*len(b) > maxDiffCells {
		return merge([]Change{{"del", before}, {"ins", after}})
	}
	return merge(lcs(a, b))
}

// words splits s into words, each with the spaces after it.
func words(s string) []string {
	var out []string
	start, inSpace := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if inSpace && !space {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// lines splits s into lines, each with its line break.
func lines(s string) []string { return strings.SplitAfter(s, "\n") }

// lcs is the diff of a and b along their longest common subsequence.
func lcs(a, b []string) []Change {
	n, m := len(a), len(b)
	// t[i][j] is the length of the LCS of a[i:] and b[j:].
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var out []Change
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, Change{"same", a[i]})
			i, j = i+1, j+1
		case t[i+1][j] >= t[i][j+1]:
			out = append(out, Change{"del", a[i]})
			i++
		default:
			out = append(out, Change{"ins", b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Change{"del", a[i]})
	}
	for ; j < m; j++ {
		out = append(out, Change{"ins", b[j]})
	}
	return out
}

// merge joins neighbouring runs of one kind, and drops empty ones.
func merge(cs []Change) []Change {
	var out []Change
	for _, c := range cs {
		switch {
		case c.Text == "":
		case len(out) > 0 && out[len(out)-1].Op == c.Op:
			out[len(out)-1].Text += c.Text
		default:
			out = append(out, c)
		}
	}
	return out
}
