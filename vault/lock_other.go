//go:build !unix

package vault

// lock serialises Write, Resolve and GC within the process. Without flock there is
// no lock across processes: writes stay atomic, and a resolution lost to a
// concurrent writer is reported by the bot's next reconcile.
func (v *Vault) lock() (func(), error) {
	v.mu.Lock()
	return v.mu.Unlock, nil
}
