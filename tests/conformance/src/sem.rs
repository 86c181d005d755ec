//! The semaphore contract, for stores that serve semaphores: fixed cases, and random sequences
//! against [`tenure_core::StoreModel`]. Instantiated with [`crate::sem_conformance_tests!`].

use std::sync::Arc;
use std::time::Duration;

use tenure::backend::{SemaphoreBackend, SemaphoreCalls as _};
use tenure_core::{PermitAnswer, SemState};

use crate::Harness;

const LONG: Duration = Duration::from_secs(60);
const NAME: &str = "semaphore:pool";

/// Unwraps a store call, naming the backend and the call on failure.
macro_rules! call {
    ($harness:expr, $call:expr) => {
        match $call.await {
            Ok(v) => v,
            Err(e) => panic!("{}: {} failed: {e}", $harness.name, stringify!($call)),
        }
    };
}

/// A fresh store's semaphore interface (with the store, which keeps what it needs alive).
async fn store(h: &Harness) -> (crate::Store, Arc<dyn SemaphoreBackend>) {
    let store = h.store().await;
    let sem = store.sem.clone().unwrap_or_else(|| panic!("{}: the store serves no semaphores", h.name));
    (store, sem)
}

fn granted(answer: PermitAnswer, what: &str, h: &Harness) -> u64 {
    answer.fence.unwrap_or_else(|| panic!("{}: {what}: refused ({answer:?}), expected a permit", h.name)).get()
}

/// An untouched name is free with no count; permits go up to the count, each with a greater
/// fencing token than the one before; a renewal keeps its token; a permit given back is granted
/// anew under a greater token; once nobody holds, the count is forgotten.
pub async fn permits_go_up_to_the_count_with_increasing_fences(h: &Harness) {
    let (s, sem) = store(h).await;
    assert_eq!(call!(h, sem.state(NAME)), SemState::default(), "{}: an untouched name", h.name);
    let first = granted(call!(h, sem.acquire(NAME, "a", LONG, 2, None)), "first permit", h);
    assert!(s.fences.first(first), "{}: first fence {first}", h.name);
    let second = granted(call!(h, sem.acquire(NAME, "b", LONG, 2, None)), "second permit", h);
    assert!(s.fences.next_after(first, second), "{}: {first} then {second}", h.name);
    let full = call!(h, sem.acquire(NAME, "c", LONG, 2, None));
    assert_eq!(full, PermitAnswer { fence: None, permits: 2 }, "{}: a third holder of two permits", h.name);
    assert_eq!(granted(call!(h, sem.acquire(NAME, "a", LONG, 2, None)), "renewal", h), first, "{}", h.name);
    let state = call!(h, sem.state(NAME));
    assert_eq!((state.permits, state.holders, state.waiting, state.fence), (2, 2, 0, second), "{}: {state:?}", h.name);
    assert!(call!(h, sem.owned(NAME, "a")) && !call!(h, sem.owned(NAME, "c")), "{}: owned", h.name);
    assert!(call!(h, sem.release(NAME, "a")), "{}: release", h.name);
    assert!(!call!(h, sem.release(NAME, "a")), "{}: a second release answered true", h.name);
    let third = granted(call!(h, sem.acquire(NAME, "c", LONG, 2, None)), "the freed permit", h);
    assert!(s.fences.next_after(second, third), "{}: {second} then {third}", h.name);
    assert!(call!(h, sem.release(NAME, "b")) && call!(h, sem.release(NAME, "c")), "{}: releases", h.name);
    let state = call!(h, sem.state(NAME));
    assert_eq!((state.permits, state.holders, state.waiting), (0, 0, 0), "{}: an empty name: {state:?}", h.name);
}

/// Waiters keeping a place are served in arrival order, a single attempt waits behind them
/// too, and a waiter that leaves the line holds nobody back.
pub async fn waiters_keep_their_places_in_arrival_order(h: &Harness) {
    let (_s, sem) = store(h).await;
    let wait = Some(LONG);
    granted(call!(h, sem.acquire(NAME, "a", LONG, 1, wait)), "the holder", h);
    for waiter in ["b", "c", "d"] {
        assert_eq!(call!(h, sem.acquire(NAME, waiter, LONG, 1, wait)).fence, None, "{}: {waiter}", h.name);
    }
    assert_eq!(call!(h, sem.state(NAME)).waiting, 3, "{}: three in line", h.name);
    assert!(call!(h, sem.release(NAME, "a")), "{}: release", h.name);
    assert_eq!(call!(h, sem.acquire(NAME, "c", LONG, 1, wait)).fence, None, "{}: c passed b", h.name);
    assert_eq!(call!(h, sem.acquire(NAME, "e", LONG, 1, None)).fence, None, "{}: a newcomer passed b", h.name);
    assert!(!call!(h, sem.release(NAME, "b")), "{}: leaving the line is no release", h.name);
    granted(call!(h, sem.acquire(NAME, "c", LONG, 1, wait)), "c, first in line once b left", h);
    let state = call!(h, sem.state(NAME));
    assert_eq!((state.holders, state.waiting), (1, 1), "{}: c holds, d waits: {state:?}", h.name);
}

/// The count is stored: another one is refused (answered with the stored count, keeping no
/// place) while anyone holds or waits, and taken once the name is empty.
pub async fn another_count_is_refused_while_the_name_is_in_use(h: &Harness) {
    let (_s, sem) = store(h).await;
    granted(call!(h, sem.acquire(NAME, "a", LONG, 3, None)), "first permit", h);
    let other = call!(h, sem.acquire(NAME, "b", LONG, 5, Some(LONG)));
    assert_eq!(other, PermitAnswer { fence: None, permits: 3 }, "{}: another count", h.name);
    assert_eq!(call!(h, sem.state(NAME)).waiting, 0, "{}: a mismatch kept a place", h.name);
    assert!(call!(h, sem.release(NAME, "a")), "{}: release", h.name);
    let answer = call!(h, sem.acquire(NAME, "b", LONG, 5, None));
    assert_eq!(answer.permits, 5, "{}: the empty name took the new count: {answer:?}", h.name);
    granted(answer, "under the new count", h);
}

/// An expired permit is free again and its holder owns and releases nothing; an expired place
/// holds nobody back.
pub async fn expired_permits_and_places_go(h: &Harness) {
    let (s, sem) = store(h).await;
    let (lease, wait) = h.short_lease();
    let first = granted(call!(h, sem.acquire(NAME, "a", lease, 1, None)), "short permit", h);
    assert_eq!(call!(h, sem.acquire(NAME, "b", LONG, 1, Some(lease))).fence, None, "{}: b waits", h.name);
    h.advance(wait).await;
    assert!(!call!(h, sem.owned(NAME, "a")), "{}: an expired holder owns", h.name);
    assert!(!call!(h, sem.release(NAME, "a")), "{}: an expired holder released", h.name);
    let state = call!(h, sem.state(NAME));
    assert_eq!((state.holders, state.waiting), (0, 0), "{}: expired entries count: {state:?}", h.name);
    let next = granted(call!(h, sem.acquire(NAME, "c", LONG, 1, None)), "after the expiry", h);
    assert!(s.fences.next_after(first, next), "{}: {first} then {next}", h.name);
}

/// Many contenders at once for a few permits: exactly the count granted, each under a fencing
/// token of its own; the others refused with the stored count; the releases free every permit.
pub async fn many_contenders_at_once_get_the_count_exactly(h: &Harness) {
    const CONTENDERS: usize = 60;
    const PERMITS: u32 = 5;
    let (_s, sem) = store(h).await;
    let tokens: Vec<String> = (0..CONTENDERS).map(|i| format!("c{i}")).collect();
    let answers = crate::join_all(tokens.iter().map(|t| sem.acquire(NAME, t, LONG, PERMITS, None))).await;
    let mut fences = Vec::new();
    let mut holders = Vec::new();
    for (token, answer) in tokens.iter().zip(answers) {
        let answer = answer.unwrap_or_else(|e| panic!("{}: contender {token}: {e}", h.name));
        assert_eq!(answer.permits, PERMITS, "{}: contender {token}: {answer:?}", h.name);
        if let Some(fence) = answer.fence {
            fences.push(fence.get());
            holders.push(token.clone());
        }
    }
    assert_eq!(fences.len(), PERMITS as usize, "{}: {} of {CONTENDERS} granted", h.name, fences.len());
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(fences.len(), PERMITS as usize, "{}: a fencing token granted twice", h.name);
    assert_eq!(call!(h, sem.state(NAME)).holders, PERMITS as usize, "{}: holders", h.name);
    let released = crate::join_all(holders.iter().map(|t| sem.release(NAME, t))).await;
    assert!(released.into_iter().all(|r| r.is_ok_and(|r| r)), "{}: every holder's release", h.name);
    assert_eq!(call!(h, sem.state(NAME)).holders, 0, "{}: holders after the releases", h.name);
}

/// A waiter leaving the line while others wait wakes them, as a permit given back does: those
/// behind it may now be let in. Every store of the suite pushes wake-ups.
pub async fn a_place_left_while_others_wait_wakes_them(h: &Harness) {
    let (_s, sem) = store(h).await;
    let wait = Some(LONG);
    granted(call!(h, sem.acquire(NAME, "a", LONG, 1, wait)), "the holder", h);
    assert_eq!(call!(h, sem.acquire(NAME, "b", LONG, 1, wait)).fence, None, "{}: b waits", h.name);
    // As a waiter does: the wake-up taken before its attempt (which subscribes, where a store must).
    let woken = sem.wakeup(NAME).unwrap_or_else(|| panic!("{}: the store pushes no wake-ups", h.name));
    assert_eq!(call!(h, sem.acquire(NAME, "c", LONG, 1, wait)).fence, None, "{}: c waits behind b", h.name);
    let woken = tokio::spawn(woken);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!woken.is_finished(), "{}: c was woken before anything happened", h.name);
    assert!(!call!(h, sem.release(NAME, "b")), "{}: leaving the line is no release", h.name);
    let woke = tokio::time::timeout(Duration::from_secs(5), woken).await;
    assert!(woke.is_ok(), "{}: c was not woken when b left the line ahead of it", h.name);
}

/// Random sequences of every semaphore call on two names, against the store model.
pub async fn sem_sequences_match_the_store_model(h: &Harness) {
    let ops = if matches!(h.clock, crate::Clock::Manual(_)) { 60 } else { 30 };
    crate::cases::sequences_match_the_store_model(h, crate::random::Mix::Semaphore, h.sequences(200, 6), ops).await;
}

/// Instantiates the semaphore cases as `#[tokio::test]`s for the harness `$harness`, as
/// [`crate::conformance_tests!`] does.
#[macro_export]
macro_rules! sem_conformance_tests {
    ($harness:expr) => {
        $crate::sem_conformance_tests!(@cases $harness;
            permits_go_up_to_the_count_with_increasing_fences,
            waiters_keep_their_places_in_arrival_order,
            another_count_is_refused_while_the_name_is_in_use,
            expired_permits_and_places_go,
            many_contenders_at_once_get_the_count_exactly,
            a_place_left_while_others_wait_wakes_them,
            sem_sequences_match_the_store_model,
        );
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness: $crate::Harness = $harness;
                $crate::sem::$case(&harness).await;
            }
        )*
    };
}
