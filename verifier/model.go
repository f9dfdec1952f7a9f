package verifier

import (
	"context"
	"slices"
)

// Model is a second opinion on a payload from a language model, asked only about the
// tools listed under verify.model_check. It reads, never sends. Review returns the
// model's decision and, for Repair or Stop, its reason; an error means it could not
// decide, which stops the payload rather than letting it through unseen.
type Model interface {
	Review(ctx context.Context, in Input) (Decision, string, error)
}

func (c Checker) wantsModel(tool string) bool {
	return c.model != nil && slices.Contains(c.cfg.ModelCheck, tool)
}

func (c Checker) modelCheck(ctx context.Context, in Input) []finding {
	d, reason, err := c.model.Review(ctx, in)
	switch {
	case err != nil:
		return []finding{stopf("no answer: %v", err)}
	case d == Pass:
		return nil
	case d == Repair || d == Stop:
		return []finding{{d, reason}}
	}
	return []finding{stopf("unknown decision %q", d)}
}
