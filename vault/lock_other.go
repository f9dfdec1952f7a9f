//go:build !unix

package vault

// lock serialises Write, Create, Resolve and GC within the process. Without flock
// there is no lock across processes: writes stay atomic, a resolution lost to a
// concurrent writer is reported by the bot's next reconcile, and Create writes a
// note once per process only.
func (v *Vault) lock() (func(), error) {
	v.mu.Lock()
	return v.mu.Unlock, nil
}

// tryLock is lock without waiting: ok is false when another writer holds it.
func (v *Vault) tryLock() (unlock func(), ok bool) {
	if !v.mu.TryLock() {
		return nil, false
	}
	return v.mu.Unlock, true
}
