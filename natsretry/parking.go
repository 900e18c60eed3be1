package natsretry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/retrypolicy/retrypolicy/queuekit"
)

// parking is where one work consumer's long waits go: the subject of its
// parked copies, the wait past which a message is moved there, and the
// consumer the policy runs them from. It is a part of its own: started
// with the work consumer's first consumption (Wrap), however many there
// are, on a context of its own, and stopped with the last. It makes its
// consumer again when that is gone, and reports a parked copy that
// vanished (a purge of the parking stream) once it is overdue.
type parking struct {
	p       *Policy
	name    string // the work stream and consumer: the key of Policy.parkings
	subject string // Park.<stream>.<consumer>
	stream  string // the parking stream's name
	durable string // the parking consumer's
	after   time.Duration
	limit   int64 // the most bytes a copy may take: the server's payload, the stream's MaxMsgSize
	ackWait time.Duration
	h       Handler
	refs    int // consumptions it serves, under p.mu

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when supervise returns
	gone   chan struct{} // a consume error that may mean the consumer is gone

	mu      sync.Mutex
	cc      jetstream.ConsumeContext
	overdue map[string]time.Time // parked record key → when its copy is due: the copies this process parked or ran
}

// maxOverdueChecks is the most parked records a sweep looks at: the ones
// longest overdue first are not picked, but the sweep runs every period,
// so that every record is looked at within a bounded time.
const maxOverdueChecks = 1000

// parkingFor returns the parking of the work consumer info, starting it if
// no consumption of that consumer runs yet: the parking stream checked,
// its consumer made, and run from then on.
func (p *Policy) parkingFor(ctx context.Context, info *jetstream.ConsumerInfo, h Handler) (*parking, error) {
	name := info.Stream + "." + info.Name
	p.mu.Lock()
	defer p.mu.Unlock()
	if pk := p.parkings[name]; pk != nil {
		pk.refs++
		return pk, nil
	}
	pk := &parking{p: p, name: name, subject: p.parkPrefix + "." + info.Stream + "." + info.Name,
		durable: info.Stream + "_" + info.Name + "_parked", after: p.parkAfter, ackWait: info.Config.AckWait, h: h, refs: 1,
		done: make(chan struct{}), gone: make(chan struct{}, 1), overdue: map[string]time.Time{}}
	if err := pk.checkStream(ctx, info.Stream); err != nil {
		return nil, err
	}
	pk.ctx, pk.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := pk.consume(ctx); err != nil {
		pk.cancel()
		return nil, fmt.Errorf("Config.Park: the parking consumer on %s: %w", queuekit.Quote(pk.stream), err)
	}
	p.parkings[name] = pk
	go pk.supervise()
	return pk, nil
}

// release ends a consumption of pk's: with the last, pk stops.
func (p *Policy) release(pk *parking) {
	p.mu.Lock()
	pk.refs--
	last := pk.refs == 0
	if last {
		delete(p.parkings, pk.name)
	}
	p.mu.Unlock()
	if last {
		pk.cancel()
		<-pk.done
	}
}

// checkStream finds the parking stream, and returns why it cannot keep
// parked copies: it is the work stream, it keeps copies once run (its
// retention), or a limit of its can drop a copy before it runs.
func (pk *parking) checkStream(ctx context.Context, work string) error {
	p := pk.p
	stream, err := p.js.StreamNameBySubject(ctx, pk.subject+".id")
	if err != nil {
		return fmt.Errorf("Config.Park: no stream captures %s: %w", queuekit.Quote(pk.subject+".>"), err)
	}
	if stream == work {
		return fmt.Errorf("Config.Park: its stream %s is the work stream: a parked message would come back to it", queuekit.Quote(stream))
	}
	ps, err := p.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("Config.Park: its stream %s: %w", queuekit.Quote(stream), err)
	}
	c := ps.CachedInfo().Config
	if c.Retention != jetstream.WorkQueuePolicy {
		return fmt.Errorf("Config.Park: its stream %s has %s retention: make it WorkQueuePolicy, so that a parked copy is removed once run and read by this consumer alone", queuekit.Quote(stream), c.Retention)
	}
	if limit := dropsCopies(c); limit != "" {
		return fmt.Errorf("Config.Park: its stream %s has %s: a parked copy could be dropped before it runs, and its message lost; remove the limit", queuekit.Quote(stream), limit)
	}
	pk.stream, pk.limit = stream, p.js.Conn().MaxPayload()
	if n := int64(c.MaxMsgSize); n > 0 {
		pk.limit = min(pk.limit, n)
	}
	return nil
}

// dropsCopies names the setting of a parking stream's config c that can
// drop a copy before it runs, "" for none.
func dropsCopies(c jetstream.StreamConfig) string {
	switch {
	case c.MaxAge > 0:
		return fmt.Sprintf("MaxAge %v", c.MaxAge)
	case c.MaxMsgs > 0:
		return fmt.Sprintf("MaxMsgs %d", c.MaxMsgs)
	case c.MaxBytes > 0:
		return fmt.Sprintf("MaxBytes %d", c.MaxBytes)
	case c.MaxMsgsPerSubject > 0:
		return fmt.Sprintf("MaxMsgsPerSubject %d", c.MaxMsgsPerSubject)
	case c.Discard == jetstream.DiscardNew:
		return "DiscardNew"
	}
	return ""
}

// consume makes the parking consumer (again) and runs its messages, in
// place of the consumption before, if any.
func (pk *parking) consume(ctx context.Context) error {
	c, err := pk.p.js.CreateOrUpdateConsumer(ctx, pk.stream, jetstream.ConsumerConfig{
		Durable: pk.durable, FilterSubject: pk.subject + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: pk.ackWait, MaxDeliver: -1, MaxAckPending: -1,
		Description: "retrypolicy: the parked messages of consumer " + pk.name,
	})
	if err != nil {
		return err
	}
	cc, err := c.Consume(func(msg jetstream.Msg) { pk.p.handleParked(pk.ctx, msg, pk) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				select {
				case pk.gone <- struct{}{}:
				default:
				}
			}
		}))
	if err != nil {
		return err
	}
	pk.mu.Lock()
	old := pk.cc
	pk.cc = cc
	pk.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return nil
}

// period is how often the parking looks after its consumer and its
// overdue copies: its AckWait, at least a second and at most 30.
func (pk *parking) period() time.Duration {
	return min(max(pk.ackWait, time.Second), 30*time.Second)
}

// supervise keeps the parking consumer and its watch until pk stops: it
// makes the consumer again when it is gone (deleted, or its stream made
// again), and sweeps for parked copies that vanished.
func (pk *parking) supervise() {
	defer close(pk.done)
	tick := time.NewTicker(pk.period())
	defer tick.Stop()
	for {
		select {
		case <-pk.ctx.Done():
			pk.mu.Lock()
			cc := pk.cc
			pk.mu.Unlock()
			cc.Stop()
			return
		case <-pk.gone:
			pk.ensure()
		case <-tick.C:
			pk.ensure()
			pk.sweep()
		}
	}
}

// ensure makes the parking consumer again, and says so, when it is gone.
func (pk *parking) ensure() {
	ctx, cancel := context.WithTimeout(pk.ctx, pk.period())
	defer cancel()
	_, err := pk.p.js.Consumer(ctx, pk.stream, pk.durable)
	if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
	if err := pk.consume(ctx); err != nil {
		pk.p.logger.ErrorContext(ctx, "natsretry: the parking consumer is gone and cannot be made again; parked messages wait until it is",
			slog.String("consumer", pk.durable), slog.String("stream", pk.stream), slog.String("error", err.Error()))
		return
	}
	pk.p.logger.WarnContext(ctx, "natsretry: the parking consumer was gone; made it again",
		slog.String("consumer", pk.durable), slog.String("stream", pk.stream))
}

// watch notes that the parked record under key has its copy due at due:
// a sweep after that looks for the copy. A nil parking watches nothing.
func (pk *parking) watch(key string, due time.Time) {
	if pk == nil {
		return
	}
	pk.mu.Lock()
	pk.overdue[key] = due
	pk.mu.Unlock()
}

// forget stops watching the parked record under key: its copy ended.
func (pk *parking) forget(key string) {
	if pk == nil {
		return
	}
	pk.mu.Lock()
	delete(pk.overdue, key)
	pk.mu.Unlock()
}

// sweep looks at the parked records whose copies are overdue by two
// periods: a record gone, or due later, is a copy that ran; a record whose
// copy is no longer in the parking stream is a copy lost (the stream
// purged): it is reported and its records removed.
func (pk *parking) sweep() {
	late := time.Now().Add(-2 * pk.period())
	var keys []string
	pk.mu.Lock()
	for key, due := range pk.overdue {
		if due.Before(late) && len(keys) < maxOverdueChecks {
			keys = append(keys, key)
		}
	}
	pk.mu.Unlock()
	for _, key := range keys {
		if pk.ctx.Err() != nil {
			return
		}
		pk.check(key, late)
	}
}

// check looks at the parked record under key, overdue before late.
func (pk *parking) check(key string, late time.Time) {
	ctx, cancel := context.WithTimeout(pk.ctx, pk.period())
	defer cancel()
	e, err := pk.p.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		pk.forget(key) // ran to its end
		return
	}
	if err != nil {
		return
	}
	rec, err := readParked(e.Value(), nil)
	if err != nil {
		return
	}
	if due := rec.state.dueTime(); due.After(late) {
		pk.watch(key, due) // it ran, and waits again
		return
	}
	if rec.copySeq == 0 {
		return // its move has not finished: the work message's redelivery does
	}
	ps, err := pk.p.js.Stream(ctx, pk.stream)
	if err == nil {
		_, err = ps.GetMsg(ctx, rec.copySeq)
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return
	}
	pk.lost(ctx, key, rec)
}

// lost reports the parked record under key whose copy vanished: logged
// with its message's identity, the Lost hook told, its records removed.
func (pk *parking) lost(ctx context.Context, key string, rec parkedRecord) {
	p := pk.p
	p.logger.ErrorContext(ctx, "natsretry: a parked message's copy is gone from the parking stream (purged?); the message is lost",
		slog.String("subject", rec.subject), slog.String("stream", rec.stream), slog.Uint64("sequence", rec.seq),
		slog.String("parking_stream", pk.stream), slog.Uint64("copy_sequence", rec.copySeq))
	if p.hooks.Lost != nil {
		p.hook(ctx, "Lost", func() { p.hooks.Lost(ctx, rec.subject) })
	}
	for _, k := range [...]string{key, rec.origin} {
		if err := p.kv.Purge(ctx, k, jetstream.PurgeTTL(markerTTL)); err != nil {
			p.logger.ErrorContext(ctx, "natsretry: cannot remove a lost message's record", slog.String("key", k), slog.String("error", err.Error()))
		}
	}
	pk.forget(key)
}

// copySeq returns the sequence of the genuine copy under subject: for a
// move finished after a crash, whose publish was refused because the copy
// is there. It is the subject's first message (the genuine copy went only
// to a subject that held none), not its last, which anyone may publish.
func (pk *parking) copySeq(ctx context.Context, subject string) (uint64, error) {
	ps, err := pk.p.js.Stream(ctx, pk.stream)
	if err != nil {
		return 0, err
	}
	m, err := ps.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}
