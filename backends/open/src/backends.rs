//! What every binding's store object holds: a store opened through the table, or a backend a
//! user wrote in the binding's language, with the backend of each kind of primitive it serves
//! ([`Slots`], whose getters name a missing one). Python's `Backend`, Node's `Backend` and the
//! JVM's `Store` wrap it and add only their language's conversions.

use tenure::Slots;

use crate::Store;

/// The backends of one store object. `U` is what a binding keeps of a user's backend (its
/// declared reach, the host that runs its calls).
pub struct Backends<U> {
    slots: Slots,
    origin: Origin<U>,
}

impl<U> std::fmt::Debug for Backends<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").field("kind", &self.kind()).field("slots", &self.slots).finish_non_exhaustive()
    }
}

/// Where a [`Backends`] came from.
#[derive(Debug)]
pub enum Origin<U> {
    /// A store of the table, opened from a URL or the environment.
    Store(Store),
    /// A backend a user wrote in the binding's language.
    User(U),
}

impl<U> Backends<U> {
    /// Every backend of `store`.
    pub fn store(store: Store) -> Self {
        Self { slots: Slots::of(&store), origin: Origin::Store(store) }
    }

    /// A user's backend serving `slots`, with what the binding keeps of it.
    pub fn user(slots: Slots, user: U) -> Self {
        Self { slots, origin: Origin::User(user) }
    }

    /// The backend of each kind of primitive it serves.
    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// Where the backends came from.
    pub fn origin(&self) -> &Origin<U> {
        &self.origin
    }

    /// The kind of store (`memory`, `sqlite`, …), or `user` for a user's backend.
    pub fn kind(&self) -> String {
        match &self.origin {
            Origin::Store(store) => store.kind().to_string(),
            Origin::User(_) => "user".to_owned(),
        }
    }

    /// How far a store of the table excludes (`process`, `host`, `cluster`); `None` for a
    /// user's backend, whose binding knows what it declares.
    pub fn reach(&self) -> Option<String> {
        match &self.origin {
            Origin::Store(store) => Some(store.kind().reach().to_string()),
            Origin::User(_) => None,
        }
    }

    /// The store to close when the object is closed (SQLite vacates expired leases; later calls
    /// fail), taken now so that the closing can outlive the borrow; `None` for a user's backend,
    /// which is the user's to close.
    pub fn closer(&self) -> Option<Store> {
        match &self.origin {
            Origin::Store(store) => Some(store.clone()),
            Origin::User(_) => None,
        }
    }
}
