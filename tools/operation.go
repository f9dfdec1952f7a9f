package tools

import "context"

type operationKey struct{}

// WithOperation returns a context that carries the id of the operation a commit
// delivers. A request that names its operation to the service (an HTTP tool's
// Idempotency-Key) reads it with OperationOf, so that every attempt of one
// operation, and the repeat that settles it, carries the same id.
func WithOperation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, operationKey{}, id)
}

// OperationOf is the operation id ctx carries, "" for none.
func OperationOf(ctx context.Context) string {
	id, _ := ctx.Value(operationKey{}).(string)
	return id
}
