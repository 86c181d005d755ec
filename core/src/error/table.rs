//! The error table: every error class of Tenure, its code, its parent and its fields, once.
//!
//! Every binding builds its language's errors from this table: the native layer hands over the
//! class named here ([`Error::class`]), and the Python, Node and JVM packages raise the class of
//! that name with their language's suffix (`LockTimeoutError`, `LockTimeoutException`). One
//! cross-binding test (`tests/interop/errors.py`) raises every code through the three packages
//! and checks each class, its parents and its fields against [`CLASSES`].
//!
//! The hierarchy is grelmicro 0.44's, with three Tenure classes placed under the reference class
//! a grelmicro user's `except` names: `LockBusyError` under `LockReentrantError` (grelmicro
//! refuses a second operation of one holder as nested usage), `LockLostError` under
//! `LockNotOwnedError` (the lease was lost), `BackendNotOpenError` under `OutOfContextError`
//! (grelmicro's error for a backend used outside its scope).

use std::time::Duration;

use super::{BackendError, BackendErrorKind, Error, LossCause, SettingsError, WouldBlockReason};

/// A field an error of a class carries, beyond its message and code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// The lock or election name (`name` in Python, `lockName` in Node and on the JVM).
    Name,
    /// The timeout the caller gave (seconds in Python, `timeoutMs` in Node, a `Duration` on
    /// the JVM).
    Timeout,
    /// The setting or variable at fault, when one is (`field`).
    Setting,
    /// The store's failure behind a lock operation's error: its cause, with a `STORE_*` code.
    Store,
    /// Why a lease was lost: `max_hold`, `expired` or `lost` (`reason`).
    Reason,
}

impl Field {
    /// The field's name in the table's JSON and the cross-binding test.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Timeout => "timeout",
            Self::Setting => "field",
            Self::Store => "store",
            Self::Reason => "reason",
        }
    }
}

/// A field's value, as [`Error::fields`] gives it (a binding converts units only).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum FieldValue<'a> {
    /// A name, a setting's name, a reason.
    Text(&'a str),
    /// A timeout.
    Duration(Duration),
    /// The store's failure behind the error.
    Store(&'a BackendError),
}

/// One class of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorClass {
    /// The class name without its language's suffix (`LockTimeout`).
    pub class: &'static str,
    /// The code of the errors of exactly this class; `None` for a base class.
    pub code: Option<&'static str>,
    /// The parent class; `None` for the root, `Tenure`.
    pub parent: Option<&'static str>,
    /// The fields its errors carry (a subclass carries its parent's too).
    pub fields: &'static [Field],
    /// The builtin Python exceptions the reference also makes it (`TimeoutError`, `ValueError`…);
    /// `BaseException` puts it outside `TenureError`, as the reference does for
    /// `EventLoopDeadlockError`.
    pub python_bases: &'static [&'static str],
}

const fn class(
    class: &'static str,
    code: Option<&'static str>,
    parent: &'static str,
    fields: &'static [Field],
    python_bases: &'static [&'static str],
) -> ErrorClass {
    ErrorClass { class, code, parent: Some(parent), fields, python_bases }
}

use Field::{Name, Reason, Setting, Store, Timeout};

/// Every class, parents before children.
pub const CLASSES: &[ErrorClass] = &[
    ErrorClass { class: "Tenure", code: None, parent: None, fields: &[], python_bases: &[] },
    class("Coordination", None, "Tenure", &[], &[]),
    class("CoordinationBackend", Some("COORDINATION_BACKEND_MISSING"), "Coordination", &[], &[]),
    class("LockReentrant", Some("LOCK_REENTRANT"), "Coordination", &[Name], &[]),
    class("LockBusy", Some("LOCK_BUSY"), "LockReentrant", &[Name], &[]),
    class("LockUpgrade", Some("LOCK_UPGRADE"), "Coordination", &[Name], &[]),
    class("LockNotOwned", Some("LOCK_NOT_OWNED"), "Coordination", &[Name], &[]),
    class("LockLost", Some("LOCK_LOST"), "LockNotOwned", &[Name, Reason], &[]),
    class("LockBackend", None, "Coordination", &[Name, Store], &[]),
    class("LockAcquire", Some("LOCK_ACQUIRE_FAILED"), "LockBackend", &[Name, Store], &[]),
    class("LockExtend", Some("LOCK_EXTEND_FAILED"), "LockBackend", &[Name, Store], &[]),
    class("LockRelease", Some("LOCK_RELEASE_FAILED"), "LockBackend", &[Name, Store], &[]),
    class("LockLockedCheck", Some("LOCK_LOCKED_CHECK_FAILED"), "LockBackend", &[Name, Store], &[]),
    class("LockOwnedCheck", Some("LOCK_OWNED_CHECK_FAILED"), "LockBackend", &[Name, Store], &[]),
    class("Admission", None, "Tenure", &[], &[]),
    class("WouldBlock", Some("WOULD_BLOCK"), "Admission", &[Name], &["RuntimeError"]),
    class("LockTimeout", Some("LOCK_TIMEOUT"), "WouldBlock", &[Name, Timeout], &["TimeoutError"]),
    class("BackendScope", Some("BACKEND_SCOPE"), "Tenure", &[], &["RuntimeError"]),
    class("OutOfContext", Some("OUT_OF_CONTEXT"), "Tenure", &[], &["RuntimeError"]),
    class("BackendNotOpen", Some("BACKEND_NOT_OPEN"), "OutOfContext", &[], &[]),
    class("SettingsValidation", Some("SETTINGS_INVALID"), "Tenure", &[Setting], &["ValueError"]),
    class("ConfigType", Some("CONFIG_TYPE"), "Tenure", &[], &["TypeError"]),
    class("EventLoopDeadlock", Some("EVENT_LOOP_DEADLOCK"), "Tenure", &[], &["BaseException"]),
];

/// The class of `code`.
pub fn by_code(code: &str) -> Option<&'static ErrorClass> {
    CLASSES.iter().find(|class| class.code == Some(code))
}

/// The class called `name`.
pub fn by_name(name: &str) -> Option<&'static ErrorClass> {
    CLASSES.iter().find(|class| class.class == name)
}

impl Error {
    /// This error's class in [the table](self).
    pub fn class(&self) -> &'static ErrorClass {
        match by_code(self.code()) {
            Some(class) => class,
            // Every code has its row: `every_code_has_one_class` checks it.
            None => &CLASSES[0],
        }
    }

    /// The fields of this error's class with their values, in the table's order.
    pub fn fields(&self) -> Vec<(Field, FieldValue<'_>)> {
        let mut fields = Vec::with_capacity(2);
        if let Some(name) = self.name() {
            fields.push((Field::Name, FieldValue::Text(name)));
        }
        if let Some(timeout) = self.timeout() {
            fields.push((Field::Timeout, FieldValue::Duration(timeout)));
        }
        if let Some(field) = self.field() {
            fields.push((Field::Setting, FieldValue::Text(field)));
        }
        if let Some(cause) = self.backend_error() {
            fields.push((Field::Store, FieldValue::Store(cause)));
        }
        if let Some(cause) = self.loss_cause() {
            fields.push((Field::Reason, FieldValue::Text(cause.as_str())));
        }
        fields
    }

    /// One error of every code, in the table's order: what the cross-binding test raises through
    /// each package (`name` "orders", a 1.5 s timeout, the field `lease_duration`, an unreachable
    /// store behind the lock-backend errors, a lease lost to another holder).
    pub fn examples() -> Vec<Error> {
        let name = || "orders".to_owned();
        let cause = || BackendError::new(BackendErrorKind::Unavailable, "connection refused");
        vec![
            Error::BackendMissing { slot: super::BackendSlot::Lock },
            Error::Reentrant { name: name() },
            Error::Busy { name: name(), operation: "acquire" },
            Error::Upgrade { name: name() },
            Error::NotOwned { name: name() },
            Error::Lost { name: name(), cause: LossCause::Lost },
            Error::Acquire { name: name(), cause: cause() },
            Error::Extend { name: name(), cause: cause() },
            Error::Release { name: name(), cause: cause() },
            Error::LockedCheck { name: name(), cause: cause() },
            Error::OwnedCheck { name: name(), cause: cause() },
            Error::WouldBlock { name: name(), reason: WouldBlockReason::LockHeld },
            Error::Timeout { name: name(), timeout: Duration::from_millis(1500) },
            Error::BackendScope {
                message: "Coordination('default') requires scope 'cluster', but the memory store reaches only \
                          scope 'process' in environment 'production'."
                    .into(),
            },
            Error::OutOfContext { message: "No backend resolved in this scope.".into() },
            Error::NotOpen { what: "the backend".into() },
            Error::Settings(SettingsError::field("lease_duration", "lease_duration must be greater than 0")),
            Error::WrongConfigType { expected: "LockConfig", got: "TaskLockConfig" },
            Error::Deadlock { what: "Lock.from_thread.acquire".into() },
        ]
    }
}

/// The table as JSON text (what `tenure errors --json` and the bindings' test hooks give).
pub fn to_json() -> String {
    let rows: Vec<String> = CLASSES
        .iter()
        .map(|c| {
            let text = |s: &str| format!("\"{s}\"");
            let list = |items: Vec<String>| format!("[{}]", items.join(","));
            format!(
                "{{\"class\":{},\"code\":{},\"parent\":{},\"fields\":{},\"python_bases\":{}}}",
                text(c.class),
                c.code.map_or("null".into(), text),
                c.parent.map_or("null".into(), text),
                list(c.fields.iter().map(|f| text(f.as_str())).collect()),
                list(c.python_bases.iter().map(|b| text(b)).collect()),
            )
        })
        .collect();
    format!("[{}]", rows.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_class_and_one_example() {
        let examples = Error::examples();
        let coded: Vec<_> = CLASSES.iter().filter_map(|c| c.code).collect();
        assert_eq!(examples.len(), coded.len(), "one example per code");
        for (example, code) in examples.iter().zip(&coded) {
            assert_eq!(example.code(), *code, "examples follow the table's order");
            assert_eq!(example.class().code, Some(*code));
        }
        for class in CLASSES {
            let same = CLASSES.iter().filter(|c| c.class == class.class || (c.code.is_some() && c.code == class.code));
            assert_eq!(same.count(), 1, "{} is in the table once", class.class);
        }
    }

    #[test]
    fn parents_come_first_and_fields_are_inherited() {
        for (i, class) in CLASSES.iter().enumerate().skip(1) {
            let parent = class.parent.and_then(by_name).expect("every class but the root has a parent");
            let at = CLASSES.iter().position(|c| c.class == parent.class).expect("in the table");
            assert!(at < i, "{}'s parent {} comes before it", class.class, parent.class);
            for field in parent.fields {
                assert!(class.fields.contains(field), "{} carries its parent's {field:?}", class.class);
            }
        }
    }

    #[test]
    fn the_classes_answer_the_predicates() {
        let under = |class: &ErrorClass, ancestor: &str| {
            let mut at = Some(class);
            while let Some(c) = at {
                if c.class == ancestor {
                    return true;
                }
                at = c.parent.and_then(by_name);
            }
            false
        };
        for e in Error::examples() {
            let class = e.class();
            assert_eq!(e.is_coordination(), under(class, "Coordination"), "{}", class.class);
            assert_eq!(e.is_lock_backend(), under(class, "LockBackend"), "{}", class.class);
            assert_eq!(e.is_would_block(), under(class, "WouldBlock"), "{}", class.class);
            assert_eq!(e.is_not_owned(), under(class, "LockNotOwned"), "{}", class.class);
            assert_eq!(e.is_out_of_context(), under(class, "OutOfContext"), "{}", class.class);
            assert_eq!(e.is_reentrant(), under(class, "LockReentrant"), "{}", class.class);
            let given: Vec<Field> = e.fields().iter().map(|(field, _)| *field).collect();
            assert_eq!(given, class.fields, "{} gives exactly its class's fields", class.class);
        }
    }

    #[test]
    fn the_json_lists_every_class() {
        let json = to_json();
        assert!(json.starts_with("[{\"class\":\"Tenure\",\"code\":null,\"parent\":null"), "{json}");
        assert_eq!(json.matches("\"class\":").count(), CLASSES.len());
        assert!(json.contains(
            "{\"class\":\"LockTimeout\",\"code\":\"LOCK_TIMEOUT\",\"parent\":\"WouldBlock\",\"fields\":[\"name\",\"timeout\"],\"python_bases\":[\"TimeoutError\"]}"
        ));
    }
}
