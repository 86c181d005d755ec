//! The read-write lock contract (spec §5.4 and the backend cases of §8.13), for stores that serve
//! read-write locks: fixed cases, and random sequences against [`tenure_core::StoreModel`].
//! Instantiated with [`crate::rw_conformance_tests!`].

use std::sync::Arc;
use std::time::Duration;

use tenure::backend::{ReadWriteCalls as _, ReadWriteLockBackend};
use tenure_core::{FencingToken, RwState, WriteGrant};

use crate::Harness;

const LONG: Duration = Duration::from_secs(60);

/// Unwraps a store call, naming the backend and the call on failure.
macro_rules! call {
    ($harness:expr, $call:expr) => {
        match $call.await {
            Ok(v) => v,
            Err(e) => panic!("{}: {} failed: {e}", $harness.name, stringify!($call)),
        }
    };
}

/// A fresh store's read-write interface (with the store, which keeps what it needs alive).
async fn store(h: &Harness) -> (crate::Store, Arc<dyn ReadWriteLockBackend>) {
    let store = h.store().await;
    let rw = store.rw.clone().unwrap_or_else(|| panic!("{}: the store serves no read-write locks", h.name));
    (store, rw)
}

fn granted(grant: Option<WriteGrant>, what: &str, h: &Harness) -> WriteGrant {
    grant.unwrap_or_else(|| panic!("{}: {what}: refused, expected a write grant", h.name))
}

fn read(generation: Option<FencingToken>, what: &str, h: &Harness) -> u64 {
    generation.unwrap_or_else(|| panic!("{}: {what}: refused, expected a generation", h.name)).get()
}

/// An untouched name reads as generation 0, free; readers share; a writer is refused beside them
/// and keeps an intent that refuses new readers (not those reading already); the writer is
/// granted once the last reader leaves, its intent then gone.
pub async fn readers_share_and_a_refused_writer_holds_new_readers_out(h: &Harness) {
    let (_s, rw) = store(h).await;
    let name = "rwlock:doc";
    assert_eq!(call!(h, rw.state(name)), RwState::default(), "{}: an untouched name", h.name);
    assert_eq!(read(call!(h, rw.acquire_read(name, "r1", LONG)), "first reader", h), 0);
    assert_eq!(read(call!(h, rw.acquire_read(name, "r2", LONG)), "second reader", h), 0);
    assert_eq!(call!(h, rw.acquire_write(name, "w1", LONG, true)), None, "{}: a writer beside readers", h.name);
    let state = call!(h, rw.state(name));
    assert_eq!((state.readers, state.waiting_writers, state.writing), (2, 1, false), "{}: {state:?}", h.name);
    assert_eq!(call!(h, rw.acquire_read(name, "r3", LONG)), None, "{}: a new reader passed an intent", h.name);
    read(call!(h, rw.acquire_read(name, "r1", LONG)), "a reader renewing while a writer waits", h);
    assert!(call!(h, rw.owned_read(name, "r1")), "{}: r1 reads", h.name);
    assert!(call!(h, rw.release_read(name, "r1")) && call!(h, rw.release_read(name, "r2")), "{}: releases", h.name);
    assert!(!call!(h, rw.release_read(name, "r2")), "{}: a second read release answered true", h.name);
    let grant = granted(call!(h, rw.acquire_write(name, "w1", LONG, true)), "the waiting writer", h);
    assert!(!grant.poisoned, "{}: a first write is poisoned", h.name);
    assert!(call!(h, rw.owned_write(name, "w1")) && !call!(h, rw.owned_read(name, "w1")), "{}: owned", h.name);
    let state = call!(h, rw.state(name));
    assert_eq!((state.writing, state.readers, state.waiting_writers), (true, 0, 0), "{}: {state:?}", h.name);
    assert_eq!(state.generation, grant.fence.get(), "{}: the state's generation", h.name);
    assert_eq!(call!(h, rw.acquire_read(name, "r1", LONG)), None, "{}: a reader beside a writer", h.name);
}

/// A writer without an intent (`nowait`) leaves readers free to enter; a withdrawn intent lets
/// them in again, and a withdrawal is answered true once.
pub async fn a_nowait_writer_keeps_no_intent_and_a_withdrawn_one_lets_readers_in(h: &Harness) {
    let (_s, rw) = store(h).await;
    let name = "rwlock:doc";
    read(call!(h, rw.acquire_read(name, "r1", LONG)), "reader", h);
    assert_eq!(call!(h, rw.acquire_write(name, "w1", LONG, false)), None, "{}: nowait writer", h.name);
    read(call!(h, rw.acquire_read(name, "r2", LONG)), "a reader after a nowait writer", h);
    assert!(!call!(h, rw.cancel_intent(name, "w1")), "{}: a nowait writer had an intent", h.name);
    assert_eq!(call!(h, rw.acquire_write(name, "w2", LONG, true)), None, "{}: writer beside readers", h.name);
    assert_eq!(call!(h, rw.acquire_read(name, "r3", LONG)), None, "{}: a reader passed an intent", h.name);
    assert!(call!(h, rw.cancel_intent(name, "w2")), "{}: the intent's withdrawal", h.name);
    assert!(!call!(h, rw.cancel_intent(name, "w2")), "{}: a second withdrawal answered true", h.name);
    read(call!(h, rw.acquire_read(name, "r3", LONG)), "a reader after the withdrawal", h);
    assert_eq!(call!(h, rw.state(name)).readers, 3, "{}: three readers", h.name);
}

/// The generation grows by each write (a renewal keeps it), a reader reads the last write's,
/// and a release is answered true once, by the writer only.
pub async fn generations_grow_per_write_and_readers_read_the_last(h: &Harness) {
    let (s, rw) = store(h).await;
    let name = "rwlock:doc";
    let first = granted(call!(h, rw.acquire_write(name, "w1", LONG, true)), "first write", h).fence.get();
    assert!(s.fences.first(first), "{}: the first write's fence {first}", h.name);
    let again = granted(call!(h, rw.acquire_write(name, "w1", LONG, true)), "renewal", h);
    assert_eq!((again.fence.get(), again.poisoned), (first, false), "{}: a renewal", h.name);
    assert!(!call!(h, rw.release_write(name, "w2")), "{}: a stranger released the write", h.name);
    assert!(call!(h, rw.release_write(name, "w1")), "{}: the writer's release", h.name);
    assert!(!call!(h, rw.release_write(name, "w1")), "{}: a second release answered true", h.name);
    assert_eq!(read(call!(h, rw.acquire_read(name, "r1", LONG)), "reader", h), first, "{}: generation", h.name);
    assert!(call!(h, rw.release_read(name, "r1")), "{}: read release", h.name);
    let second = granted(call!(h, rw.acquire_write(name, "w2", LONG, true)), "second write", h);
    assert!(s.fences.next_after(first, second.fence.get()), "{}: {first} then {second:?}", h.name);
    assert!(!second.poisoned, "{}: a write after a clean release is poisoned", h.name);
    assert_eq!(call!(h, rw.state(name)).generation, second.fence.get(), "{}: the state's generation", h.name);
    assert_eq!(call!(h, rw.state("rwlock:other")).generation, 0, "{}: generations are per name", h.name);
}

/// A writer whose lease ran out without a release poisons the next grant (its own release is
/// then refused); the grant after a clean release is not poisoned. Expired readers and intents
/// no longer count.
pub async fn an_expired_writer_poisons_the_next_grant_and_expired_readers_go(h: &Harness) {
    let (s, rw) = store(h).await;
    let (lease, wait) = h.short_lease();
    let name = "rwlock:doc";
    let first = granted(call!(h, rw.acquire_write(name, "w1", lease, true)), "short write", h).fence.get();
    h.advance(wait).await;
    assert!(!call!(h, rw.owned_write(name, "w1")), "{}: an expired writer owns", h.name);
    assert!(!call!(h, rw.release_write(name, "w1")), "{}: an expired writer released", h.name);
    let poisoned = granted(call!(h, rw.acquire_write(name, "w2", LONG, true)), "after the expiry", h);
    assert!(poisoned.poisoned, "{}: the grant after an expired writer is not poisoned", h.name);
    assert!(s.fences.next_after(first, poisoned.fence.get()), "{}: {first} then {poisoned:?}", h.name);
    assert!(call!(h, rw.release_write(name, "w2")), "{}: release", h.name);
    read(call!(h, rw.acquire_read(name, "r1", lease)), "short reader", h);
    assert_eq!(call!(h, rw.acquire_write(name, "w3", lease, true)), None, "{}: writer beside a reader", h.name);
    h.advance(wait).await;
    let state = call!(h, rw.state(name));
    assert_eq!((state.readers, state.waiting_writers), (0, 0), "{}: expired holders count: {state:?}", h.name);
    let clean = granted(call!(h, rw.acquire_write(name, "w3", LONG, true)), "after the reader expired", h);
    assert!(!clean.poisoned, "{}: a grant after a clean release is poisoned", h.name);
}

/// A downgrade turns the write lease into a read lease at the same generation in one step: the
/// caller reads, writers stay out, other readers may join; without the write lease it is
/// refused.
pub async fn a_downgrade_leaves_the_writer_reading(h: &Harness) {
    let (_s, rw) = store(h).await;
    let name = "rwlock:doc";
    assert_eq!(call!(h, rw.downgrade(name, "w1", LONG)), None, "{}: a downgrade without a write", h.name);
    let grant = granted(call!(h, rw.acquire_write(name, "w1", LONG, true)), "write", h);
    assert_eq!(call!(h, rw.downgrade(name, "w2", LONG)), None, "{}: a stranger downgraded", h.name);
    let generation = read(call!(h, rw.downgrade(name, "w1", LONG)), "downgrade", h);
    assert_eq!(generation, grant.fence.get(), "{}: the downgrade's generation", h.name);
    assert!(call!(h, rw.owned_read(name, "w1")) && !call!(h, rw.owned_write(name, "w1")), "{}: sides", h.name);
    assert_eq!(call!(h, rw.acquire_write(name, "w2", LONG, false)), None, "{}: a writer beside it", h.name);
    assert_eq!(read(call!(h, rw.acquire_read(name, "r1", LONG)), "another reader", h), generation);
    assert_eq!(call!(h, rw.downgrade(name, "w1", LONG)), None, "{}: a second downgrade", h.name);
    let state = call!(h, rw.state(name));
    assert_eq!((state.writing, state.readers), (false, 2), "{}: {state:?}", h.name);
}

/// Many readers at once (more than a store may send in one batch): every acquisition granted at
/// the same generation while a reader's renewal and another's release run beside them; a writer
/// refused beside them; every release answered true once, the second of a token's releases made
/// at once false; then the writer granted.
pub async fn many_readers_at_once_are_answered_each(h: &Harness) {
    const READERS: usize = 150;
    let (_s, rw) = store(h).await;
    let name = "rwlock:doc";
    let first = granted(call!(h, rw.acquire_write(name, "w0", LONG, true)), "first write", h).fence.get();
    assert!(call!(h, rw.release_write(name, "w0")), "{}: release", h.name);
    read(call!(h, rw.acquire_read(name, "early1", LONG)), "an early reader", h);
    read(call!(h, rw.acquire_read(name, "early2", LONG)), "another early reader", h);
    let tokens: Vec<String> = (0..READERS).map(|i| format!("r{i}")).collect();
    let reads = futures_lite::future::zip(
        futures_lite::future::zip(
            crate::join_all(tokens.iter().map(|t| rw.acquire_read(name, t, LONG))),
            rw.acquire_read(name, "early1", LONG),
        ),
        rw.release_read(name, "early2"),
    );
    let ((generations, renewed), released) = reads.await;
    for (token, generation) in tokens.iter().zip(generations) {
        let generation = generation.unwrap_or_else(|e| panic!("{}: reader {token}: {e}", h.name));
        assert_eq!(read(generation, token, h), first, "{}: reader {token}'s generation", h.name);
    }
    let renewed = renewed.unwrap_or_else(|e| panic!("{}: the renewal: {e}", h.name));
    let released = released.unwrap_or_else(|e| panic!("{}: the release: {e}", h.name));
    assert!(renewed.is_some() && released, "{}: renewal {renewed:?}, release {released}", h.name);
    assert_eq!(call!(h, rw.state(name)).readers, READERS + 1, "{}: readers", h.name);
    assert_eq!(call!(h, rw.acquire_write(name, "w1", LONG, false)), None, "{}: a writer beside readers", h.name);
    let twice = tokens.iter().chain(tokens.iter().take(10));
    let releases = crate::join_all(twice.map(|t| rw.release_read(name, t))).await;
    let answers: Vec<bool> = releases.into_iter().map(|r| r.unwrap_or_else(|e| panic!("{}: {e}", h.name))).collect();
    for (i, token) in tokens.iter().enumerate() {
        let twice = answers.get(READERS + i).copied();
        let trues = usize::from(answers[i]) + twice.map_or(0, usize::from);
        assert_eq!(trues, 1, "{}: {token}'s releases answered {} and {twice:?}", h.name, answers[i]);
    }
    assert!(call!(h, rw.release_read(name, "early1")), "{}: the early reader's release", h.name);
    assert_eq!(call!(h, rw.state(name)).readers, 0, "{}: readers after their releases", h.name);
    let grant = granted(call!(h, rw.acquire_write(name, "w1", LONG, false)), "the writer after the readers", h);
    assert!(grant.fence.get() > first, "{}: {first} then {grant:?}", h.name);
}

/// Random sequences of every read-write call on two names, against the store model.
pub async fn rw_sequences_match_the_store_model(h: &Harness) {
    let ops = if matches!(h.clock, crate::Clock::Manual(_)) { 60 } else { 30 };
    crate::cases::sequences_match_the_store_model(h, crate::random::Mix::ReadWrite, h.sequences(200, 6), ops).await;
}

/// Instantiates the read-write lock cases as `#[tokio::test]`s for the harness `$harness`, as
/// [`crate::conformance_tests!`] does.
#[macro_export]
macro_rules! rw_conformance_tests {
    ($harness:expr) => {
        $crate::rw_conformance_tests!(@cases $harness;
            readers_share_and_a_refused_writer_holds_new_readers_out,
            a_nowait_writer_keeps_no_intent_and_a_withdrawn_one_lets_readers_in,
            generations_grow_per_write_and_readers_read_the_last,
            an_expired_writer_poisons_the_next_grant_and_expired_readers_go,
            a_downgrade_leaves_the_writer_reading,
            many_readers_at_once_are_answered_each,
            rw_sequences_match_the_store_model,
        );
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness: $crate::Harness = $harness;
                $crate::rw::$case(&harness).await;
            }
        )*
    };
}
