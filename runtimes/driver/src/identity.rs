//! Holder identities and nonces from one process-wide counter (spec §4), with randomness from
//! the operating system (`rand::rng()`: ChaCha reseeded from OS entropy). Tokens are capabilities,
//! so they are drawn from a cryptographic generator, never from the jitter generator.

use std::sync::atomic::{AtomicU64, Ordering};

use tenure_core::{HolderIdentity, HolderKind, Nonce, Token, WorkerId};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn next() -> u64 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A fresh identity: never equal to one handed out before in this process.
pub(crate) fn holder_identity() -> HolderIdentity {
    HolderIdentity::new(next(), &mut rand::rng())
}

/// A fresh task-lock nonce.
pub(crate) fn nonce() -> Nonce {
    Nonce::new(next(), &mut rand::rng())
}

/// A fresh holder token for `worker`.
pub(crate) fn holder_token(worker: &WorkerId, kind: HolderKind, rng: &mut rand::rngs::ThreadRng) -> Token {
    Token::fresh_holder(worker, kind, next(), rng)
}

/// A fresh task-lock token for `worker`.
pub(crate) fn task_lock_token(worker: &WorkerId, kind: HolderKind) -> Token {
    Token::task_lock(worker, kind, &holder_identity(), &nonce())
}
