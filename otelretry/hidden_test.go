package otelretry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrypolicy/retrypolicy/otelretry"
	"github.com/retrypolicy/retrypolicy/retry"
)

// TestHiddenResendsAreCountedNotRetries: an attempt whose transport sent
// it again twice on its own (told as an adapter tells them) counts 2 in
// retrypolicy.hidden_resends, by the call's attributes, and no retry.
func TestHiddenResendsAreCountedNotRetries(t *testing.T) {
	s := newSDK(t)
	_, err := retryOp(context.Background(), s.in, "fetch", oneSecond, func(ctx context.Context) (int, error) {
		retry.HiddenResend(ctx)
		retry.HiddenResend(ctx)
		return 1, nil
	})
	assert.NoError(t, err)
	m := s.metrics(t)
	op := set(otelretry.Source.String("retry"), otelretry.Operation.String("fetch"))
	assert.Equal(t, map[attribute.Distinct]int64{op: 2}, counts(t, m["retrypolicy.hidden_resends"], "{resend}"))
	_, retried := m["retrypolicy.retries"]
	assert.False(t, retried, "no retry recorded")
}
