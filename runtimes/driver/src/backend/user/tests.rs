use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use futures_lite::future::{block_on, poll_once};
use tenure_core::{
    BackendErrorKind, FencingToken, Key, PermitAnswer, RwState, SemState, StoreOp, StoreReply, Token, WriteGrant,
};

use super::{Answer, Call, Fences, Host, Method, UserStore};
use crate::backend::LockBackend;
use crate::host::{Home, Task, Work};

/// A loop that runs its work when the test says so, on the test's thread.
struct TestLoop {
    thread: ThreadId,
    work: Mutex<VecDeque<Work>>,
}

impl Home for TestLoop {
    fn thread(&self) -> ThreadId {
        self.thread
    }

    fn post(&self, work: Work) {
        self.work.lock().expect("not poisoned").push_back(work);
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        poll();
    }

    fn drop_later(&self, future: Task) {
        drop(future);
    }
}

impl TestLoop {
    fn turn(&self) {
        while let Some(work) = self.work.lock().expect("not poisoned").pop_front() {
            work.run();
        }
    }
}

/// A host whose calls wait for the test to answer them.
#[derive(Default)]
struct TestHost {
    home: Mutex<Option<Arc<TestLoop>>>,
    calls: Mutex<Vec<(Call, Answer)>>,
    cancelled: Mutex<Vec<u32>>,
}

impl Host for Arc<TestHost> {
    type Running = u32;

    fn home(&self) -> Result<Arc<dyn Home>, tenure_core::BackendError> {
        let home = self.home.lock().expect("not poisoned").clone();
        home.map(|h| h as Arc<dyn Home>)
            .ok_or_else(|| tenure_core::BackendError::new(BackendErrorKind::Closed, "TestHost has no event loop"))
    }

    fn start(&self, call: Call, answer: Answer) -> Option<u32> {
        let mut calls = self.calls.lock().expect("not poisoned");
        calls.push((call, answer));
        Some(u32::try_from(calls.len()).expect("few calls"))
    }

    fn cancel(&self, running: u32) {
        self.cancelled.lock().expect("not poisoned").push(running);
    }
}

fn setup() -> (Arc<TestHost>, Arc<TestLoop>, UserStore<Arc<TestHost>>) {
    let home = Arc::new(TestLoop { thread: thread::current().id(), work: Mutex::default() });
    let host = Arc::new(TestHost::default());
    *host.home.lock().expect("not poisoned") = Some(home.clone());
    let store = UserStore::new(host.clone(), "DictLocks", Fences::default());
    (host, home, store)
}

fn acquire(name: &str, token: &str) -> StoreOp {
    StoreOp::LockAcquire {
        key: Key::parse(name).expect("a key"),
        token: Token::new(token).expect("a token"),
        lease: Duration::from_secs(1),
        details: None,
    }
}

/// Runs one call whose answer `answer` gives.
fn run(
    store: &UserStore<Arc<TestHost>>,
    host: &TestHost,
    home: &TestLoop,
    op: StoreOp,
    answer: impl FnOnce(&Answer),
) -> Result<StoreReply, tenure_core::BackendError> {
    let mut call = store.execute(op);
    assert!(block_on(poll_once(&mut call)).is_none(), "nothing answered yet");
    home.turn();
    let (_, given) = host.calls.lock().expect("not poisoned").pop().expect("the call was started on the loop");
    answer(&given);
    drop(given);
    block_on(call)
}

#[test]
fn a_call_is_started_on_the_loop_with_its_arguments_and_answers_in_its_shape() {
    let (host, home, store) = setup();
    let mut call = store.execute(acquire("lock:cart", "t1"));
    assert!(block_on(poll_once(&mut call)).is_none());
    assert!(host.calls.lock().expect("not poisoned").is_empty(), "started on the loop's turn, not by the caller");
    home.turn();
    let (started, answer) = host.calls.lock().expect("not poisoned").pop().expect("a call started");
    assert_eq!(
        (started.method, started.name.as_str(), started.token.as_deref()),
        (Method::Acquire, "lock:cart", Some("t1"))
    );
    assert_eq!((started.method.user_name(), started.lease), ("acquire", Some(Duration::from_secs(1))));
    answer.fence(Some(7));
    assert_eq!(block_on(call).expect("answered"), StoreReply::Fence(Some(tenure_core::FencingToken::new(7))));
}

#[test]
fn a_fence_lower_than_one_answered_before_for_the_name_is_refused() {
    let (host, home, store) = setup();
    run(&store, &host, &home, acquire("lock:cart", "t1"), |a| a.fence(Some(5))).expect("answered");
    // Another name has its own sequence.
    run(&store, &host, &home, acquire("lock:other", "t2"), |a| a.fence(Some(1))).expect("answered");
    let error =
        run(&store, &host, &home, acquire("lock:cart", "t3"), |a| a.fence(Some(3))).expect_err("the call fails");
    assert_eq!(error.kind(), BackendErrorKind::FenceRegression);
    assert_eq!(error.message(), "DictLocks.acquire answered fencing token 3 after 5 for lock:cart");
    assert!(!error.to_string().contains("t3"));
}

#[test]
fn an_answer_of_the_wrong_shape_or_none_at_all_is_an_error() {
    let (host, home, store) = setup();
    let error = run(&store, &host, &home, acquire("lock:cart", "t1"), |a| a.flag(true)).expect_err("the call fails");
    assert_eq!(error.kind(), BackendErrorKind::Protocol);
    assert!(error.to_string().contains("acquire answered an answer of another call"), "{error}");
    let error = run(&store, &host, &home, acquire("lock:cart", "t1"), |_| {}).expect_err("the call fails");
    assert_eq!(error.kind(), BackendErrorKind::Closed);
    assert!(error.to_string().contains("closed before the call answered"), "{error}");
    let error = run(&store, &host, &home, acquire("lock:cart", "t1"), |a| {
        a.fail_with("DictLocks.acquire raised OSError", std::io::Error::other("down"));
    })
    .expect_err("the call fails");
    assert_eq!((error.kind(), error.message()), (BackendErrorKind::Other, "DictLocks.acquire raised OSError"));
    let source = std::error::Error::source(&error).and_then(|s| s.downcast_ref::<std::io::Error>());
    assert_eq!(source.map(ToString::to_string).as_deref(), Some("down"));
}

#[test]
fn a_call_the_driver_drops_is_cancelled_on_the_loop_and_a_late_answer_is_ignored() {
    let (host, home, store) = setup();
    let mut call = store.execute(acquire("lock:cart", "t1"));
    assert!(block_on(poll_once(&mut call)).is_none());
    home.turn();
    drop(call);
    assert!(host.cancelled.lock().expect("not poisoned").is_empty(), "cancelled on the loop's turn");
    home.turn();
    assert_eq!(*host.cancelled.lock().expect("not poisoned"), [1]);
    let (_, answer) = host.calls.lock().expect("not poisoned").pop().expect("a call started");
    answer.fence(Some(9));
    drop(answer);
    // Nobody read the late fence: a lower one afterwards is no regression.
    run(&store, &host, &home, acquire("lock:cart", "t3"), |a| a.fence(Some(6))).expect("answered");
    // Dropped before it was ever started: never started at all.
    let call = store.execute(acquire("lock:cart", "t2"));
    drop(call);
    home.turn();
    assert!(host.calls.lock().expect("not poisoned").is_empty());
}

#[test]
fn schedule_calls_and_a_missing_loop_are_errors_naming_the_backend() {
    let (host, _home, store) = setup();
    let claim = StoreOp::ScheduleClaim { key: Key::parse("schedule:job").expect("a key"), due: 1.0 };
    let error = block_on(store.execute(claim)).expect_err("the call fails");
    assert_eq!(error.kind(), BackendErrorKind::Rejected);
    assert!(error.message().starts_with("DictLocks is a backend written by a user, not a schedule backend"));
    *host.home.lock().expect("not poisoned") = None;
    let error = block_on(store.execute(acquire("lock:cart", "t1"))).expect_err("the call fails");
    assert_eq!(error.message(), "TestHost has no event loop");
}

fn key(name: &str) -> Key {
    Key::parse(name).expect("a key")
}

fn token(token: &str) -> Token {
    Token::new(token).expect("a token")
}

fn write(name: &str, who: &str, intent: bool) -> StoreOp {
    StoreOp::RwAcquireWrite { key: key(name), token: token(who), lease: Duration::from_secs(2), intent, details: None }
}

fn permit(name: &str, who: &str) -> StoreOp {
    let wait = Some(Duration::from_millis(300));
    StoreOp::SemAcquire {
        key: key(name),
        token: token(who),
        lease: Duration::from_secs(2),
        permits: 3,
        wait,
        details: None,
    }
}

#[test]
fn read_write_calls_go_by_their_user_names_with_their_arguments() {
    let (host, home, store) = setup();
    let mut call = store.execute(write("rwlock:doc", "w1", false));
    assert!(block_on(poll_once(&mut call)).is_none());
    home.turn();
    let (started, answer) = host.calls.lock().expect("not poisoned").pop().expect("a call started");
    assert_eq!(
        (started.method.user_name(), started.intent, started.lease),
        ("acquire_write", Some(false), Some(Duration::from_secs(2)))
    );
    answer.write(Some((4, true)));
    drop(answer);
    let granted = block_on(call).expect("answered");
    assert_eq!(granted, StoreReply::Write(Some(WriteGrant { fence: FencingToken::new(4), poisoned: true })));
    // A reader's generation may be 0 (never written); the state keeps its four counts.
    let read = StoreOp::RwAcquireRead {
        key: key("rwlock:new"),
        token: token("r1"),
        lease: Duration::from_secs(1),
        details: None,
    };
    let reply = run(&store, &host, &home, read, |a| a.generation(Some(0))).expect("answered");
    assert_eq!(reply, StoreReply::Fence(Some(FencingToken::new(0))));
    let state = RwState { generation: 4, writing: false, readers: 2, waiting_writers: 1 };
    let reply = run(&store, &host, &home, StoreOp::RwState { key: key("rwlock:doc") }, |a| a.rw_state(state));
    assert_eq!(reply.expect("answered"), StoreReply::Rw(state));
    assert_eq!((Method::RwState.user_name(), Method::RwState.as_str()), ("state", "rw_state"));
}

#[test]
fn a_writers_fence_below_one_answered_before_is_refused_but_permits_may_answer_out_of_order() {
    let (host, home, store) = setup();
    run(&store, &host, &home, write("rwlock:doc", "w1", true), |a| a.write(Some((5, false)))).expect("answered");
    let error = run(&store, &host, &home, write("rwlock:doc", "w2", true), |a| a.write(Some((3, false))))
        .expect_err("a lower write fence");
    assert_eq!(error.kind(), BackendErrorKind::FenceRegression);
    assert_eq!(error.message(), "DictLocks.acquire_write answered fencing token 3 after 5 for rwlock:doc");
    // Two permits held at once: their grants may come back in any order.
    let first = run(&store, &host, &home, permit("semaphore:pool", "a"), |a| a.permit(Some(8), 3));
    let second = run(&store, &host, &home, permit("semaphore:pool", "b"), |a| a.permit(Some(7), 3));
    assert_eq!(
        first.expect("answered"),
        StoreReply::Permit(PermitAnswer { fence: Some(FencingToken::new(8)), permits: 3 })
    );
    assert_eq!(
        second.expect("answered"),
        StoreReply::Permit(PermitAnswer { fence: Some(FencingToken::new(7)), permits: 3 })
    );
    // A refusal answers the stored count, whatever was asked (the driver names the mismatch).
    let refused = run(&store, &host, &home, permit("semaphore:pool", "d"), |a| a.permit(None, 2));
    assert_eq!(refused.expect("answered"), StoreReply::Permit(PermitAnswer { fence: None, permits: 2 }));
    let (started, _) = {
        let mut call = store.execute(permit("semaphore:pool", "c"));
        assert!(block_on(poll_once(&mut call)).is_none());
        home.turn();
        host.calls.lock().expect("not poisoned").pop().expect("a call started")
    };
    assert_eq!(
        (started.method.user_name(), started.permits, started.wait),
        ("acquire", Some(3), Some(Duration::from_millis(300)))
    );
}

#[test]
fn answers_out_of_range_or_inconsistent_are_errors_naming_what() {
    let (host, home, store) = setup();
    type Answers = Box<dyn FnOnce(&Answer)>;
    let cases: [(StoreOp, Answers, &str); 12] = [
        (
            StoreOp::RwState { key: key("rwlock:doc") },
            Box::new(|a| a.rw_state(RwState { generation: 0, writing: true, readers: 0, waiting_writers: 0 })),
            "state answered a state with a writer and generation 0",
        ),
        (
            StoreOp::SemState { key: key("semaphore:p") },
            Box::new(|a| a.sem_state(SemState { permits: 0, holders: 2, waiting: 0, fence: 4 })),
            "state answered a state with holders or waiters and no count",
        ),
        (
            permit("semaphore:p", "a"),
            Box::new(|a| a.permit(Some(5), 2)),
            "acquire answered a permit granted under a count of 2 when 3 was asked",
        ),
        (
            write("rwlock:doc", "w", true),
            Box::new(|a| a.write(Some((0, false)))),
            "acquire_write answered a write grant's fencing token 0",
        ),
        (permit("semaphore:p", "a"), Box::new(|a| a.permit(Some(1), 0)), "acquire answered a permit count of 0"),
        (acquire("lock:cart", "z"), Box::new(|a| a.fence(Some(0))), "acquire answered a fencing token 0"),
        (
            StoreOp::LeaderGet { key: key("leader:svc") },
            Box::new(|a| {
                let at = tenure_core::time::WallTime::from_unix_micros(0);
                a.record(Some(tenure_core::LeaderRecord {
                    holder: "w".to_owned(),
                    lease_duration: Duration::from_secs(1),
                    acquired_at: at,
                    renewed_at: at,
                    transitions: u64::MAX,
                    metadata: tenure_core::Metadata::default(),
                    fence: None,
                }));
            }),
            "get answered a record whose transitions is 18446744073709551615",
        ),
        (acquire("lock:cart", "z"), Box::new(|a| a.fence(Some(1 << 63))), "a fencing token 9223372036854775808"),
        (
            permit("semaphore:p", "a"),
            Box::new(|a| a.permit(Some(1 << 63), 3)),
            "a permit's fencing token 9223372036854775808",
        ),
        (
            StoreOp::RwState { key: key("rwlock:doc") },
            Box::new(|a| a.rw_state(RwState { generation: 1, writing: true, readers: 1, waiting_writers: 0 })),
            "state answered a state with a writer and readers at once",
        ),
        (
            StoreOp::SemState { key: key("semaphore:p") },
            Box::new(|a| a.sem_state(SemState { permits: 2, holders: 3, waiting: 0, fence: 4 })),
            "state answered a state with 3 holders of 2 permits",
        ),
        (
            StoreOp::SemState { key: key("semaphore:p") },
            Box::new(|a| a.flag(true)),
            "state answered an answer of another call",
        ),
    ];
    for (op, answer, what) in cases {
        let error = run(&store, &host, &home, op, answer).expect_err(what);
        assert_eq!(error.kind(), BackendErrorKind::Protocol, "{error}");
        assert!(error.to_string().contains(what), "{error} (expected {what})");
    }
}
