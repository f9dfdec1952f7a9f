package action

// HTTPRequest is the request a declared HTTP tool makes, as approved: every
// byte that leaves but the values of the headers that come from the
// environment, which are named by their variable and read at commit time.
type HTTPRequest struct {
	Method string `json:"method"`
	// URL is the declaration's template with the caller's values filled in,
	// each escaped as one path segment or one query value.
	URL     string       `json:"url"`
	Headers []HTTPHeader `json:"headers,omitempty"`
	// Body is the body's canonical JSON (compact, keys sorted), sent as
	// application/json; "" for none.
	Body string `json:"body,omitempty"`
	// IdempotencyKey marks a request that carries the operation id as its
	// Idempotency-Key header.
	IdempotencyKey bool `json:"idempotency_key,omitempty"`
	// Reconcile is the GET that tells whether the effect exists, its
	// {operation_id} filled in when it is read; "" for none.
	Reconcile string `json:"reconcile,omitempty"`
}

// HTTPHeader is one header of a request: its value is Value, or Prefix and the
// value of the environment variable Env, which is never written down.
type HTTPHeader struct {
	Name   string `json:"name"`
	Env    string `json:"env,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Value  string `json:"value,omitempty"`
}
