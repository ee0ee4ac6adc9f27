//! Typed ids (issue #50, item 4): an id says what it names, so a
//! Playroom's id cannot be passed where a Playground's is meant. They are
//! the ids the reconcilers are given and the wakes carry (`crate::wake`);
//! stored and shown they are the same 64-bit integers (`serde`
//! transparent), and the store's queries take the integer
//! ([`ObjectId::get`]).

use std::fmt::{self, Debug, Display};
use std::hash::Hash;

use serde::{Deserialize, Serialize};

/// What every typed id is: a copyable 64-bit row id of one kind of object.
pub trait ObjectId: Copy + Eq + Ord + Hash + Debug + Display + Send + Sync + 'static + From<i64> + Into<i64> {
    /// The row id.
    fn get(self) -> i64;
}

macro_rules! object_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl ObjectId for $name {
            fn get(self) -> i64 {
                self.0
            }
        }

        impl From<i64> for $name {
            fn from(id: i64) -> Self {
                $name(id)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                Display::fmt(&self.0, f)
            }
        }

        impl Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }
    };
}

object_id!(
    /// An account's id.
    AccountId
);
object_id!(
    /// A Playground's id.
    PlaygroundId
);
object_id!(
    /// A Playroom's id (also what its edge and its sweep are keyed by).
    PlayroomId
);
object_id!(
    /// A Playspec's id.
    PlayspecId
);
object_id!(
    /// A Playzone's id.
    PlayzoneId
);
object_id!(
    /// An import template's id.
    TemplateId
);
object_id!(
    /// A schedule's id.
    ScheduleId
);
object_id!(
    /// A trigger's id.
    TriggerId
);
object_id!(
    /// An event's id (the outbox's row).
    EventId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_integer_when_stored_shown_or_converted() {
        let id = PlaygroundId(42);
        assert_eq!(serde_json::to_string(&id).unwrap(), "42");
        assert_eq!(serde_json::from_str::<PlaygroundId>("42").unwrap(), id);
        assert_eq!((id.to_string(), format!("{id:?}")), ("42".to_owned(), "PlaygroundId(42)".to_owned()));
        assert_eq!((i64::from(id), PlaygroundId::from(42), id.get()), (42, id, 42));
    }
}
