package retrygrpc

import "github.com/retrypolicy/retrypolicy/retry"

// openFirst opens the stream's attempt outside the loop (a stream sent
// once, as its first message is sent; any stream whose header is asked
// first), asking the loop's throttle first when it is the call's first
// attempt: a call the throttle rejects is not opened, and the loop then
// gives up Throttled without opening it. s.mu is held.
func (s *retryStream) openFirst() error {
	if s.sent == 0 {
		ctx, ok := s.loop.Admit(s.ctx.Context)
		s.ctx.Context = ctx
		if !ok {
			return retry.ErrThrottled
		}
	}
	return s.open(&s.ctx)
}
