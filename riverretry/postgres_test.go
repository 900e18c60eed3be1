package riverretry

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/retrypolicy/retrypolicy/fleet"
	"github.com/retrypolicy/retrypolicy/queuekit/deadlettertest"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// databaseURLEnv names the variable holding the URL of a PostgreSQL server
// the tests may create databases on; .ci/with-postgres sets it.
const databaseURLEnv = "RETRYPOLICY_TEST_DATABASE_URL"

// postgresDatabase creates a database of the test's own on the server of
// RETRYPOLICY_TEST_DATABASE_URL, dropped when the test ends, and returns
// its URL. Without the variable, the test is skipped.
func postgresDatabase(t testing.TB) string {
	t.Helper()
	server := os.Getenv(databaseURLEnv)
	if server == "" {
		t.Skip(databaseURLEnv + " is not set: skipping the PostgreSQL test (.ci/with-postgres starts a server and sets it)")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	require.NoError(t, err, "connecting to %s", databaseURLEnv)
	name := fmt.Sprintf("riverretry_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	u, err := url.Parse(server)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// postgresPool opens a pool on a database URL, closed when the test ends.
func postgresPool(t testing.TB, databaseURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), databaseURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// postgresCases are strategy cases of a few seconds of real time: on a
// real server the waits are waited.
var postgresCases = []strategyCase{
	strategyCases[0], // none
	{name: "bounded gives up at max_attempts", strategy: `{"strategy":"bounded","max_attempts":3,"backoff":{"kind":"fixed","base_delay_secs":1}}`,
		outcomes: []outcome{fail}, wantState: rivertype.JobStateCancelled, wantRuns: 3},
	{name: "exponential recovers", strategy: `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"exponential","base_delay_secs":1,"max_delay_secs":2}}`,
		outcomes: []outcome{fail, fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 4},
	{name: "jitter, through a panic", strategy: `{"strategy":"unless_stopped","backoff":{"kind":"exponential_with_jitter","base_delay_secs":1}}`,
		outcomes: []outcome{crash, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 3},
	{name: "uptime credit", strategy: `{"strategy":"unless_stopped","backoff":{"kind":"exponential","base_delay_secs":1}}`, run: 1500 * time.Millisecond,
		outcomes: []outcome{fail, fail, succeed}, wantState: rivertype.JobStateCompleted, wantRuns: 3},
	strategyCases[8], // a snooze is not a failure
	strategyCases[9], // the worker cancels
}

// TestStrategiesOnPostgres runs the strategy cases on River over a real
// PostgreSQL server, in real time: every decision is the library's, every
// retry is scheduled when due (to the microsecond PostgreSQL keeps) and
// none runs before.
func TestStrategiesOnPostgres(t *testing.T) {
	pool := postgresPool(t, postgresDatabase(t))
	h := newHarness(t, riverpgxv5.New(pool), time.Microsecond, nil)
	ids := insertCases(t, h.client, postgresCases)
	rows := h.waitEnded(ids, 2*time.Minute)
	for i, c := range postgresCases {
		// The worker's clock reads a little before and after the
		// middleware's, around its run.
		checkCase(t, h, c, rows[ids[i]], 20*time.Millisecond)
	}
}

// TestWriteLogOnPostgres: WriteLog reads River's jobs on PostgreSQL as on
// SQLite: a job that fails twice, 1 s apart, then succeeds is three
// lines, which fleet.ReadLog reads and a replay under its strategy ends
// as River did.
func TestWriteLogOnPostgres(t *testing.T) {
	pool := postgresPool(t, postgresDatabase(t))
	h := newHarness(t, riverpgxv5.New(pool), time.Microsecond, nil)
	const strategy = `{"strategy":"bounded","max_attempts":5,"backoff":{"kind":"fixed","base_delay_secs":1}}`
	res, err := h.client.Insert(context.Background(), testArgs{Case: "logged", Outcomes: []outcome{fail, fail, succeed}},
		&river.InsertOpts{Metadata: []byte(`{"retry_strategy":` + strategy + `}`)})
	require.NoError(t, err)
	h.waitEnded([]int64{res.Job.ID}, time.Minute)
	var buf bytes.Buffer
	n, err := WriteLog(context.Background(), &buf, h.client, LogOptions{Kinds: []string{"test"}})
	require.NoError(t, err)
	assert.Equal(t, 3, n, buf.String())
	log, err := fleet.ReadLog(&buf)
	require.NoError(t, err)
	rec := log.Recorded()
	assert.Equal(t, 1, rec.Completed)
	assert.Equal(t, 3, rec.Attempts)
}

// TestDeadJobsKeepTheKitsContractOnPostgres runs the dead-letter kit's
// suite on PostgreSQL: each job made available only while it is still the
// same cancelled job, read under its row's lock.
func TestDeadJobsKeepTheKitsContractOnPostgres(t *testing.T) {
	url := postgresDatabase(t)
	deadlettertest.Run(t, func(t *testing.T) deadlettertest.Fixture {
		pool := postgresPool(t, url)
		_, err := pool.Exec(context.Background(), "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
		require.NoError(t, err)
		return newDeadFixture(t, riverpgxv5.New(pool), false)
	})
}
