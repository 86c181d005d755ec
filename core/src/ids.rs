//! Names, keys, identities and tokens (spec §1.1, §4).
//!
//! Cheap to clone (`Arc<str>` inside): a machine hands its key and token to every store operation
//! without allocating.

use std::fmt;
use std::sync::Arc;

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, SettingsError};
use crate::rng::{push_random_hex, random_hex};

/// The longest lock, task-lock or election name.
pub const MAX_NAME_CHARS: usize = 200;
/// The longest worker identity.
pub const MAX_WORKER_CHARS: usize = 200;
/// The longest ownership token accepted from a caller or read back from a store.
pub const MAX_TOKEN_BYTES: usize = 512;

/// A validated lock, task-lock or election name (spec §1.3; 0.44 checks every primitive).
///
/// 1 to 200 characters; the first a letter or digit, the rest letters, digits, `.`, `_`, `:`,
/// `/` or `-`. A name taken from a [`Key`] shares the key's text.
#[derive(Clone)]
pub struct Name {
    /// The name is `text[start..]` (a key's text with its prefix skipped, or the name itself).
    text: Arc<str>,
    start: u32,
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Name {
    /// Validates `name`.
    pub fn new(name: &str) -> Result<Self, Error> {
        let bytes = name.as_bytes();
        let fits = !bytes.is_empty()
            && bytes.len() <= MAX_NAME_CHARS
            && bytes[0].is_ascii_alphanumeric()
            && bytes.iter().all(|&c| c.is_ascii_alphanumeric() || b"._:/-".contains(&c));
        if fits {
            return Ok(Self { text: name.into(), start: 0 });
        }
        Err(SettingsError::field(
            "name",
            format!(
                "Invalid lock name {}: a name has 1 to {MAX_NAME_CHARS} characters (at most {MAX_NAME_CHARS}), \
                 starts with a letter or digit and continues with letters, digits, '.', '_', ':', '/' or '-'. \
                 Valid examples: 'cart', 'users:42', 'payments/eu', 'weather.svc'.",
                shown(name)
            ),
        )
        .into())
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        // `start` is a prefix length at a char boundary (prefixes are ASCII).
        self.text.get(self.start as usize..).unwrap_or_default()
    }
}

/// A user string for an error message: quoted, escaped, and cut at 64 characters.
pub(crate) fn shown(s: &str) -> String {
    let mut cut: String = s.chars().take(64).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({:?})", self.as_str())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The primitive a store key belongs to; each has its own key prefix so `Lock("x")` and
/// `TaskLock("x")` never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    /// `lock:<name>`
    Lock,
    /// `tasklock:<name>`
    TaskLock,
    /// `leader:<name>`
    Leader,
    /// The bare task name (schedules are not prefixed).
    Schedule,
    /// `rwlock:<name>`
    ReadWriteLock,
    /// `semaphore:<name>`
    Semaphore,
}

impl KeyKind {
    /// The prefix put before the name on the store.
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::Lock => "lock:",
            Self::TaskLock => "tasklock:",
            Self::Leader => "leader:",
            Self::Schedule => "",
            Self::ReadWriteLock => "rwlock:",
            Self::Semaphore => "semaphore:",
        }
    }
}

/// A store key: a kind prefix and a name (`lock:cart`), in one shared string.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key {
    text: Arc<str>,
    kind: KeyKind,
}

impl Key {
    /// The key of `name` for `kind`.
    pub fn new(kind: KeyKind, name: &Name) -> Self {
        let mut text = String::with_capacity(kind.prefix().len() + name.as_str().len());
        text.push_str(kind.prefix());
        text.push_str(name.as_str());
        Self { text: text.into(), kind }
    }

    /// The key stored as `text`: `lock:`, `tasklock:`, `leader:`, `rwlock:` or `semaphore:` and
    /// a name, else a bare (schedule) name; the name is validated as [`Name::new`] does.
    pub fn parse(text: &str) -> Result<Self, Error> {
        const PREFIXED: [KeyKind; 5] =
            [KeyKind::Lock, KeyKind::TaskLock, KeyKind::Leader, KeyKind::ReadWriteLock, KeyKind::Semaphore];
        for kind in PREFIXED {
            if let Some(name) = text.strip_prefix(kind.prefix()) {
                return Ok(Self::new(kind, &Name::new(name)?));
            }
        }
        Ok(Self::new(KeyKind::Schedule, &Name::new(text)?))
    }

    /// The full key as stored (`lock:cart`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The shared text of the key, for maps that keep it.
    pub fn shared(&self) -> &Arc<str> {
        &self.text
    }

    /// The unprefixed name (`cart`), as errors and handles show it; shares the key's text.
    pub fn name(&self) -> Name {
        let start = u32::try_from(self.kind.prefix().len()).unwrap_or(0);
        Name { text: self.text.clone(), start }
    }

    /// The unprefixed name as text.
    pub fn name_str(&self) -> &str {
        &self.text[self.kind.prefix().len()..]
    }

    /// The primitive the key belongs to.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?})", &*self.text)
    }
}

/// A worker identity: who runs the primitive (a pod, a process).
///
/// Generated as 16 lowercase hex characters (64 random bits) unless given.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WorkerId(Arc<str>);

impl WorkerId {
    /// A fresh random identity (`secrets.token_hex(8)`).
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self(random_hex(rng, 8).into())
    }

    /// Validates a given identity: 1 to 200 characters, no control characters.
    pub fn new(worker: &str) -> Result<Self, Error> {
        let count = worker.chars().count();
        if count == 0 || count > MAX_WORKER_CHARS || worker.chars().any(char::is_control) {
            return Err(SettingsError::field(
                "worker",
                format!("worker must have 1 to {MAX_WORKER_CHARS} characters and no control characters"),
            )
            .into());
        }
        Ok(Self(worker.into()))
    }

    /// The identity of a forked child process: `"{worker}.{suffix}"` (spec §4).
    #[must_use]
    pub fn forked(&self, suffix: &ForkSuffix) -> Self {
        Self(format!("{}.{}", self.0, suffix.0).into())
    }

    /// The identity as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for WorkerId {
    type Error = Error;

    fn try_from(s: String) -> Result<Self, Error> {
        Self::new(&s)
    }
}

impl From<WorkerId> for String {
    fn from(w: WorkerId) -> Self {
        w.0.to_string()
    }
}

impl fmt::Debug for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkerId({:?})", &*self.0)
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The per-process suffix a forked child adds to its worker identity: 8 hex characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkSuffix(Arc<str>);

impl ForkSuffix {
    /// A fresh suffix (`secrets.token_hex(4)`).
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self(random_hex(rng, 4).into())
    }
}

/// The identity of one holder (an async task, a thread): `"{counter}.{16 hex}"`.
///
/// `counter` comes from a process-wide counter the driver keeps (shared with nonces), so
/// identities never repeat even when task or thread ids are recycled.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HolderIdentity(Arc<str>);

impl HolderIdentity {
    /// The identity numbered `counter`, with 64 random bits.
    pub fn new<R: Rng + ?Sized>(counter: u64, rng: &mut R) -> Self {
        let mut text = String::with_capacity(20 + 1 + 16);
        push_decimal(&mut text, counter);
        text.push('.');
        push_random_hex(&mut text, rng, 8);
        Self(text.into())
    }

    /// The identity as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for HolderIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HolderIdentity({:?})", &*self.0)
    }
}

/// A task-lock nonce: `":{counter}.{16 hex}"`, appended to the holder's token.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Nonce(Arc<str>);

impl Nonce {
    /// The nonce numbered `counter`, with 64 random bits.
    pub fn new<R: Rng + ?Sized>(counter: u64, rng: &mut R) -> Self {
        let mut text = String::with_capacity(1 + 20 + 1 + 16);
        text.push(':');
        push_decimal(&mut text, counter);
        text.push('.');
        push_random_hex(&mut text, rng, 8);
        Self(text.into())
    }

    /// The nonce as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({:?})", &*self.0)
    }
}

/// Who holds a lease in the store (an async task or a thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderKind {
    /// An async task: `…:task:…`.
    Task,
    /// A thread using a blocking adapter: `…:thread:…`.
    Thread,
}

impl HolderKind {
    const fn infix(self) -> &'static str {
        match self {
            Self::Task => ":task:",
            Self::Thread => ":thread:",
        }
    }
}

/// A short string built on the stack, then shared in one allocation (a `String` only when long).
struct TextBuf {
    bytes: [u8; 160],
    len: usize,
    spill: Option<String>,
}

impl TextBuf {
    fn new() -> Self {
        Self { bytes: [0; 160], len: 0, spill: None }
    }

    fn push_str(&mut self, s: &str) {
        if let Some(spill) = &mut self.spill {
            spill.push_str(s);
        } else if let Some(room) = self.bytes.get_mut(self.len..self.len + s.len()) {
            room.copy_from_slice(s.as_bytes());
            self.len += s.len();
        } else {
            let mut spill = String::with_capacity(self.len + s.len() + 64);
            spill.push_str(self.as_str());
            spill.push_str(s);
            self.spill = Some(spill);
        }
    }

    fn push_decimal(&mut self, n: u64) {
        let mut digits = String::new();
        push_decimal(&mut digits, n);
        self.push_str(&digits);
    }

    fn push_hex(&mut self, word: u64) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0u8; 16];
        for (i, b) in word.to_le_bytes().into_iter().enumerate() {
            hex[2 * i] = DIGITS[usize::from(b >> 4)];
            hex[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
        }
        // Hex digits are ASCII.
        self.push_str(std::str::from_utf8(&hex).unwrap_or_default());
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s were copied in, so the bytes are UTF-8.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }

    fn into_shared(self) -> Arc<str> {
        match self.spill {
            Some(spill) => spill.into(),
            None => Arc::from(self.as_str()),
        }
    }
}

/// Appends `n` in decimal, without the formatting machinery (tokens are made per acquisition).
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits[i..].iter().for_each(|&d| out.push(char::from(d)));
}

/// An ownership token: the value a store keeps for the holder of a lease.
///
/// A token is a capability (whoever has it can release the lease), so `Debug` hides it and
/// nothing in Tenure logs it. The shape is not a promise; stores treat it as opaque text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(Arc<str>);

/// The worker part of a holder token (`3f2a…:task:1.9c…` → `3f2a…`): who holds, without the
/// capability to release. A token of another shape (another writer's) is shown as `unknown`,
/// never whole.
pub fn holder_worker(token: &str) -> &str {
    token.split_once(':').map_or("unknown", |(worker, _)| worker)
}

impl Token {
    /// `"{worker}:task:{identity}"` or `"{worker}:thread:{identity}"`: a `Lock` holder's token.
    pub fn holder(worker: &WorkerId, kind: HolderKind, identity: &HolderIdentity) -> Self {
        Self::joined(&[worker.as_str(), kind.infix(), identity.as_str()])
    }

    /// A fresh holder's token, `"{worker}:{kind}:{counter}.{16 hex}"`, built in one allocation:
    /// [`Token::holder`] with a new [`HolderIdentity`] numbered `counter`.
    pub fn fresh_holder<R: Rng + ?Sized>(worker: &WorkerId, kind: HolderKind, counter: u64, rng: &mut R) -> Self {
        let mut text = TextBuf::new();
        text.push_str(worker.as_str());
        text.push_str(kind.infix());
        text.push_decimal(counter);
        text.push_str(".");
        text.push_hex(rng.next_u64());
        Self(text.into_shared())
    }

    /// A task lock's token: the holder's token followed by a nonce.
    pub fn task_lock(worker: &WorkerId, kind: HolderKind, identity: &HolderIdentity, nonce: &Nonce) -> Self {
        Self::joined(&[worker.as_str(), kind.infix(), identity.as_str(), nonce.as_str()])
    }

    fn joined(parts: &[&str]) -> Self {
        let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        parts.iter().for_each(|part| text.push_str(part));
        Self(text.into())
    }

    /// A leader election's token: the worker identity itself (spec §4).
    pub fn leader(worker: &WorkerId) -> Self {
        Self(worker.0.clone())
    }

    /// A caller-supplied or stored token: 1 to 512 bytes, no control characters.
    pub fn new(token: &str) -> Result<Self, Error> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES || token.chars().any(char::is_control) {
            return Err(SettingsError::field(
                "token",
                format!("token must have 1 to {MAX_TOKEN_BYTES} bytes and no control characters"),
            )
            .into());
        }
        Ok(Self(token.into()))
    }

    /// The token as stored. Do not log it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<{} bytes>)", self.0.len())
    }
}

/// A fencing token: per name, strictly increasing on every free→held transition, never reused,
/// kept across release (spec §5.1). Starts at 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FencingToken(u64);

impl FencingToken {
    /// The first token a name ever gets.
    pub const FIRST: Self = Self(1);

    /// The token `value`.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The token after this one.
    #[must_use]
    pub const fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifies one store operation of one machine; a reply names the operation it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(u64);

impl OpId {
    /// The id `n`.
    pub const fn new(n: u64) -> Self {
        Self(n)
    }

    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// What one acquisition yields: the name, the ownership token and the fencing token.
#[derive(Clone, PartialEq, Eq)]
pub struct LockHandle {
    /// The unprefixed lock name.
    pub name: Name,
    /// The ownership token kept in the store for this holder. A capability: do not log it.
    pub token: Token,
    /// The fencing token of this acquisition; unchanged by renewals of a live lease.
    pub fencing_token: FencingToken,
}

impl fmt::Debug for LockHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockHandle")
            .field("name", &self.name)
            .field("fencing_token", &self.fencing_token)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn names_follow_the_reference_rule() {
        for ok in ["cart", "users:42", "payments/eu", "weather.svc", "a-b_c.d:e/f", "42abc"] {
            assert!(Name::new(ok).is_ok(), "{ok}");
        }
        assert!(Name::new(&"a".repeat(200)).is_ok());
        for bad in ["", "has space", "tab\t", "nul\0", "-lead", "/x", ":x", "é"] {
            let err = Name::new(bad).expect_err(bad).to_string();
            assert!(err.contains("Invalid lock name") && err.contains("at most"), "{err}");
            assert!(err.contains("Valid examples:"), "{err}");
        }
        let long = Name::new(&"a".repeat(201)).expect_err("201 chars").to_string();
        assert!(long.contains("at most 200") && long.len() < 400, "{long}");
    }

    #[test]
    fn keys_prefix_the_name_and_give_it_back() {
        let name = Name::new("cart").expect("valid");
        let lock = Key::new(KeyKind::Lock, &name);
        let task = Key::new(KeyKind::TaskLock, &name);
        assert_eq!((lock.as_str(), lock.name().as_str()), ("lock:cart", "cart"));
        assert_eq!(task.as_str(), "tasklock:cart");
        assert_ne!(lock, task);
        assert_eq!(Key::new(KeyKind::Leader, &name).as_str(), "leader:cart");
        assert_eq!(Key::new(KeyKind::Schedule, &name).as_str(), "cart");
    }

    #[test]
    fn tokens_have_the_reference_shapes_and_hide_in_debug() {
        let mut rng = SplitMix64::new(1);
        let worker = WorkerId::random(&mut rng);
        assert_eq!(worker.as_str().len(), 16);
        assert_ne!(worker, WorkerId::random(&mut rng));
        let id = HolderIdentity::new(3, &mut rng);
        assert!(id.as_str().starts_with("3.") && id.as_str().len() == 18);
        let task = Token::holder(&worker, HolderKind::Task, &id);
        assert_eq!(task.as_str(), format!("{worker}:task:{}", id.as_str()));
        let thread = Token::holder(&worker, HolderKind::Thread, &id);
        assert!(thread.as_str().contains(":thread:"));
        let nonce = Nonce::new(4, &mut rng);
        assert!(nonce.as_str().starts_with(":4."));
        let tl = Token::task_lock(&worker, HolderKind::Task, &id, &nonce);
        assert!(tl.as_str().starts_with(task.as_str()) && tl.as_str().ends_with(nonce.as_str()));
        assert_eq!(Token::leader(&worker).as_str(), worker.as_str());
        assert!(!format!("{task:?}").contains(worker.as_str()));
    }

    #[test]
    fn fresh_holder_tokens_match_the_two_step_shape_even_for_long_workers() {
        let worker = WorkerId::new("w7").expect("valid");
        let token = Token::fresh_holder(&worker, HolderKind::Task, 42, &mut SplitMix64::new(9));
        let expected = Token::holder(&worker, HolderKind::Task, &HolderIdentity::new(42, &mut SplitMix64::new(9)));
        assert_eq!(token, expected);
        let long = WorkerId::new(&"é".repeat(200)).expect("valid");
        let token = Token::fresh_holder(&long, HolderKind::Thread, u64::MAX, &mut SplitMix64::new(9));
        assert!(token.as_str().starts_with(long.as_str()) && token.as_str().contains(":thread:18446744073709551615."));
        assert_eq!(token.as_str().len(), 400 + 8 + 20 + 1 + 16);
    }

    #[test]
    fn forked_workers_extend_the_parent_identity() {
        let mut rng = SplitMix64::new(2);
        let parent = WorkerId::new("w1").expect("valid");
        let a = parent.forked(&ForkSuffix::random(&mut rng));
        let b = parent.forked(&ForkSuffix::random(&mut rng));
        assert!(a.as_str().starts_with("w1.") && a.as_str().len() == 11);
        assert_ne!(a, b);
        assert_ne!(a, parent);
    }

    #[test]
    fn bad_workers_and_tokens_are_rejected() {
        assert!(WorkerId::new("").is_err());
        assert!(WorkerId::new("a\nb").is_err());
        assert!(WorkerId::new(&"w".repeat(201)).is_err());
        assert!(Token::new("").is_err());
        assert!(Token::new(&"t".repeat(513)).is_err());
        assert!(Token::new("w:task:1.ab").is_ok());
    }
}
