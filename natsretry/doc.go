// Package natsretry applies retrypolicy strategies to the messages of NATS JetStream consumers.
//
// A JetStream consumer has MaxDeliver and a fixed BackOff list, which
// apply to ack timeouts only; it has no sliding window, no credit for a
// long run, and no dead-letter stream. Under a Policy each delivery of a
// message is a run: the handler's nil acks the message; its error is a
// failure, recorded in the message's history (the instant, and the run's
// length as uptime) and decided by the message's strategy: a retry now
// (Nak), a wait (NakWithDelay to the due time), or an end: the message is
// copied to the dead-letter subject, then terminated.
//
// # Consuming
//
//	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "retrypolicy",
//		Storage: jetstream.FileStorage, TTL: 2 * time.Hour, LimitMarkerTTL: time.Minute})
//	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "PARK", Subjects: []string{"park.>"},
//		Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy})
//	policy, err := natsretry.New(ctx, js, natsretry.Config{
//		Default:    retrypolicy.Default(),
//		Subjects:   map[string]retrypolicy.Strategy{"orders.new": ordersStrategy},
//		History:    kv,
//		DeadLetter: "dead.orders", // a stream must capture it
//		Park:       "park",        // a work-queue stream with no limits must capture park.>
//	})
//	cc, err := policy.Consume(ctx, consumer, func(ctx context.Context, m jetstream.Msg) error { … })
//
// The consumer must ack explicitly, with MaxDeliver -1 and no BackOff, so
// that the strategy decides every redelivery; Wrap and Consume refuse
// another, naming the setting. While a handler runs, the policy tells
// JetStream it is in progress every AckWait/2, so that a long run is not
// taken for a dead one.
//
// # Whose strategy
//
// A message's own strategy is its HeaderStrategy header, a strategy
// descriptor in JSON; else its subject's in Config.Subjects; else
// Config.Default. A message whose own strategy is invalid runs under its
// subject's, logged at its first delivery: it is never dropped for it.
//
// # The history
//
// Each failing message's history lives in Config.History, a JetStream
// key-value bucket, under its stream, consumer and stream sequence: the
// last delivery whose end the policy saw, the due time, and the failures
// that can still count (those in the strategy's window; for a bounded
// strategy at most its MaxAttempts), in the binary encoding of
// retrypolicy.History. It survives a consumer crash and a server restart
// as the bucket does, and is removed, with every revision, when the
// message is acked or dead-lettered: a purge of its key, whose marker
// expires after a minute (the bucket must have a LimitMarkerTTL; New
// checks). No admin request ($JS.API.STREAM.>) is made per message. A
// first delivery reads nothing; a message that succeeds at once costs no
// storage round trip.
//
// The history's key holds the message's stream, consumer, stream sequence
// and its own timestamp, so that a stream made again never meets an old
// history; a history is treated as written by a stranger: a last delivery
// seen far beyond the message's own is repaired, and a due time farther
// than the wait decided plus AckWait is not obeyed.
//
// A delivery the policy did not see end (its consumer died mid-run, and
// JetStream redelivered it after AckWait) counts as one failure, at the
// redelivery, with no uptime credit; a gap of several such deliveries
// counts once. A delivery that arrives before its due time is sent back
// to it (NakWithDelay) and counts nothing; one older than a delivery
// already seen to end is left alone. JetStream delivers at least once, so
// a message may come again after its ack and leave a history behind: give
// the bucket a TTL, as long as Config.History says (New, Wrap and Consume
// refuse a TTL that could drop a waiting message's history).
//
// # The dead-letter subject
//
// A message given up (its strategy is fatal, or its error is marked
// retry.Permanent) is published to Config.DeadLetter with its payload and
// headers (but JetStream's own, Nats-*), and the headers HeaderReason,
// HeaderFailures, HeaderError (at most MaxErrorText bytes), HeaderSubject,
// HeaderStream and HeaderSequence; then it is terminated and its history
// removed. Its history is marked before the copy is published, so that a
// crash between the two finishes the move at the redelivery rather than
// deciding again; the copy's message id makes the dead-letter stream drop
// a second publication within its Duplicates window. DeadLetters is the
// dead-letter stream as queuekit's dead-letter kit reads it: a dead letter
// replayed goes back to its subject, once.
//
// # Parking
//
// A message naked with a delay holds one of its consumer's MaxAckPending
// slots until it is redelivered, so a policy parks by default: New
// requires Config.Park unless Config.WaitInPlace is set. A message that is
// to wait longer than Config.ParkAfter is moved to a parking stream (one
// with work-queue retention and no limit that can drop a copy, capturing
// Park.>; Wrap checks): its state is kept in the bucket as a parked record
// under a random id, a copy carrying only that id is published, the
// record is bound to the copy's stream sequence, and the message is
// acked. A consumer the policy makes there runs the copy when due, as the
// message was published. Only the copy whose sequence its record holds
// claims it: any other runs as a message of its own.
//
// The parking is a part of its own, once per work consumer however often
// Wrap is called: it runs on a context of its own (the one given to Wrap
// is for setup), stops with the last consumption, makes its consumer again
// when it is gone, and reports a copy that vanished (logged, Hooks.Lost,
// its records removed).
//
// # What a handler cannot do
//
// Nothing a handler does stops the consumer: a panic in it, in a hook or
// in a method of its error, runtime.Goexit, or an error that holds itself
// is a failure of its run, logged with the stack. A run longer than
// Config.MaxRun is abandoned, and a message's own strategy waits at most
// Config.MaxHeaderDelay. A dead letter is replayed only where it came
// from: to the stream the operator names, on a subject that stream
// captures.
//
// # Layers
//
// A handler's context carries Config.DeferAfter (retry.DeferAfter): a
// retry.Do or retryhttp loop inside it whose next wait is longer gives
// up, and the message waits that long in JetStream instead of holding the
// handler.
//
// # Hooks
//
// Config.Hooks are told of each decision, each message dead-lettered or
// lost, and each history started anew; package otelnats, a module of its own, makes
// OpenTelemetry metrics of them.
package natsretry
