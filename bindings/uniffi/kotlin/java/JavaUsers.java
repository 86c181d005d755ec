// Tenure from Java, written the way Java users write it: try-with-resources guards, blocking
// calls with java.time.Duration, the exception hierarchy, a leadership listener as a lambda, and
// a store of one's own written as plain blocking methods (a table a ShedLock user already has).
// Usage: java -cp … JavaUsers STORE_URL (exits nonzero on a failed check)
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import tenure.BlockingLockBackend;
import tenure.BlockingSemaphoreBackend;
import tenure.ElectionOptions;
import tenure.LeaderElection;
import tenure.Lock;
import tenure.LockGuard;
import tenure.LockNotOwnedException;
import tenure.LockOptions;
import tenure.LockState;
import tenure.LockTimeoutException;
import tenure.Permit;
import tenure.Semaphore;
import tenure.SemaphoreState;
import tenure.SettingsValidationException;
import tenure.Store;
import tenure.TaskLock;
import tenure.TaskLockOptions;
import tenure.TaskRun;
import tenure.TenureException;
import tenure.WouldBlockException;

public final class JavaUsers {
    /** Locks in a map, as a Java user writes them over a table of their own. */
    static final class MapLocks implements BlockingLockBackend {
        private final Map<String, String> holders = new HashMap<>();
        private final Map<String, Long> fences = new HashMap<>();

        @Override
        public synchronized Long acquire(String name, String token, Duration duration) {
            String holder = holders.get(name);
            if (holder != null && !holder.equals(token)) return null;
            if (holder == null) fences.merge(name, 1L, Long::sum);
            holders.put(name, token);
            return fences.get(name);
        }

        @Override
        public synchronized boolean release(String name, String token) {
            return holders.remove(name, token);
        }

        @Override
        public synchronized boolean locked(String name) {
            return holders.containsKey(name);
        }

        @Override
        public synchronized boolean owned(String name, String token) {
            return token.equals(holders.get(name));
        }
    }

    /** Permits kept in maps (no leases: enough for one run), fences growing per name. */
    static final class MapPermits implements BlockingSemaphoreBackend {
        private final Map<String, Map<String, Long>> holders = new HashMap<>();
        private final Map<String, Long> fences = new HashMap<>();

        @Override
        public synchronized Permit acquire(String name, String token, Duration duration, int permits, Duration wait) {
            Map<String, Long> held = holders.computeIfAbsent(name, n -> new HashMap<>());
            if (held.containsKey(token)) return new Permit(held.get(token), permits);
            if (held.size() >= permits) return new Permit(null, permits);
            long fence = fences.merge(name, 1L, Long::sum);
            held.put(token, fence);
            return new Permit(fence, permits);
        }

        @Override
        public synchronized boolean release(String name, String token) {
            return holders.getOrDefault(name, Map.of()).remove(token) != null;
        }

        @Override
        public synchronized boolean owned(String name, String token) {
            return holders.getOrDefault(name, Map.of()).containsKey(token);
        }

        @Override
        public synchronized SemaphoreState state(String name) {
            int held = holders.getOrDefault(name, Map.of()).size();
            return new SemaphoreState(held == 0 ? 0 : 2, held, 0, fences.getOrDefault(name, 0L));
        }
    }

    private static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String suffix = "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (Store store = Store.openBlocking(args[0])) {
            LockOptions options = new LockOptions().withLeaseDuration(Duration.ofSeconds(30)).withPurpose("nightly export");
            Lock lock = new Lock("orders" + suffix, store, options);
            long first;
            try (LockGuard guard = lock.acquireBlocking(Duration.ofSeconds(5))) {
                first = guard.getFencingToken();
                LockState state = lock.stateBlocking();
                check(state.getHolder() != null && "nightly export".equals(state.getHolder().getPurpose()), "state: " + state);
                check(state.getHolder().getPid() == ProcessHandle.current().pid(), "the holder's pid: " + state);
                check(guard.ownedBlocking(), "a fresh guard is not owned");
                check(guard.extendBlocking() == first, "an extend changed the fence");
            }
            check(!lock.lockedBlocking(), "try-with-resources did not release");
            try (LockGuard held = lock.tryAcquireBlocking()) {
                check(held.getFencingToken() > first, "the fence did not grow");
                try {
                    new Lock(lock.getName(), store).acquireBlocking(Duration.ofMillis(100));
                    throw new AssertionError("acquired a held lock");
                } catch (LockTimeoutException e) {
                    check(e instanceof WouldBlockException && e instanceof TenureException, "the hierarchy");
                    check(e.getCode().equals("LOCK_TIMEOUT") && lock.getName().equals(e.getLockName()), "code and name");
                }
                held.releaseBlocking();
                try {
                    held.releaseBlocking();
                    throw new AssertionError("released twice");
                } catch (LockNotOwnedException e) {
                    check(e.getCode().equals("LOCK_NOT_OWNED"), "code " + e.getCode());
                }
            }
            try {
                new Lock("orders", store, new LockOptions().withRetryInterval(Duration.ofMillis(-1)));
                throw new AssertionError("a negative interval was accepted");
            } catch (SettingsValidationException e) {
                check("retryInterval".equals(e.getField()), "field " + e.getField());
            }

            TaskLock task = new TaskLock("report" + suffix, store, new TaskLockOptions().withMinHoldDuration(Duration.ofSeconds(5)));
            try (TaskRun run = task.enterBlocking()) {
                check(run.getFencingToken() > 0, "a run's fence");
            }
            try {
                task.enterBlocking();
                throw new AssertionError("a second run in the window");
            } catch (WouldBlockException e) {
                check(e.getCode().equals("WOULD_BLOCK"), "code " + e.getCode());
            }

            List<Boolean> heard = new CopyOnWriteArrayList<>();
            ElectionOptions fast = new ElectionOptions()
                .withLeaseDuration(Duration.ofSeconds(2))
                .withRenewDeadline(Duration.ofSeconds(1))
                .withRetryInterval(Duration.ofMillis(50))
                .withBackendTimeout(Duration.ofMillis(500));
            try (LeaderElection election = new LeaderElection("leader" + suffix, store, fast)) {
                election.start(heard::add);
                check(election.waitForLeaderBlocking(Duration.ofSeconds(10)), "did not lead");
                check(election.isLeader() && election.getRecord() != null, "no record while leading");
            }
            for (int i = 0; i < 100 && heard.size() < 2; i++) Thread.sleep(20);
            check(heard.equals(List.of(true, false)), "the listener heard " + heard);
        }
        try (Store own = Store.customBlocking(new MapLocks())) {
            Lock lock = new Lock("export", own);
            long first;
            try (LockGuard guard = lock.acquireBlocking(Duration.ofSeconds(5))) {
                first = guard.getFencingToken();
                check(lock.lockedBlocking(), "held on my store, but not locked");
            }
            try (LockGuard again = lock.acquireBlocking(Duration.ofSeconds(5))) {
                check(again.getFencingToken() == first + 1, "my store's fence did not grow");
            }
            check(own.getKind().equals("user") && own.getScope() == null, "kind and scope of my store");
        }
        try (Store permits = Store.customBlocking(null, null, null, null, null, new MapPermits())) {
            Semaphore pool = new Semaphore("pool", 2, permits);
            try (LockGuard a = pool.acquireBlocking(); LockGuard b = pool.acquireBlocking()) {
                check(b.getFencingToken() == a.getFencingToken() + 1, "each permit its own fence");
                try {
                    pool.tryAcquireBlocking();
                    throw new AssertionError("a third permit of two");
                } catch (WouldBlockException e) {
                    check(e.getCode().equals("WOULD_BLOCK"), "code " + e.getCode());
                }
            }
            check(pool.stateBlocking().getFence() == 2, "my store's fence");
        }
        System.out.println("java: every check passed");
    }
}
