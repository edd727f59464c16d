//! The room's byte budget (docs/lua-api.md, The byte budget): how many
//! bytes the canonical state holds, by one simple measure, kept up to date
//! by every transaction (`Txn`) and bounded by [`crate::Limits::bytes_max`]
//! (`crate::Limits`).
//!
//! The measure: every value counts [`VALUE_BYTES`], plus its string's
//! bytes (and, in an object, each key's bytes); every record (an entity, a
//! prompt, a timer, a stack, a player, a seat) counts a fixed size for what
//! it always holds, plus its ids, texts and values. It approximates memory,
//! and it is exact arithmetic on the state alone: the total kept up to date
//! action by action always equals [`State::measure_held`] of the state,
//! whatever history led there (a test checks it), so a room resumed from a
//! save, recovered from a log or replayed decides exactly as the original.

use std::collections::BTreeMap;

use crate::entity::{Entity, Player, Reveal};
use crate::records::{Prompt, Stack, Timer};
use crate::state::State;
use crate::value::Value;

/// What one value counts besides its string's bytes.
pub const VALUE_BYTES: u64 = 16;

/// What an entity counts besides its ids, texts and values.
pub const ENTITY_BYTES: u64 = 256;

/// What a prompt or a timer counts besides its ids, texts and values.
pub const RECORD_BYTES: u64 = 128;

/// What a stack, a player or a seat counts besides its ids.
pub const SMALL_RECORD_BYTES: u64 = 64;

fn len(s: &str) -> u64 {
    u64::try_from(s.len()).unwrap_or(u64::MAX)
}

/// An id (or any short text in a list): a value and its bytes.
pub fn id_bytes(id: &str) -> u64 {
    VALUE_BYTES.saturating_add(len(id))
}

/// A value: [`VALUE_BYTES`] each, plus strings' and keys' bytes.
pub fn value_bytes(v: &Value) -> u64 {
    VALUE_BYTES.saturating_add(match v {
        Value::String(s) => len(s),
        Value::Array(a) => a.iter().map(value_bytes).fold(0, u64::saturating_add),
        Value::Object(o) => map_bytes(o),
        _ => 0,
    })
}

/// An object's entries (its keys and values), without the object itself.
pub fn map_bytes(o: &BTreeMap<String, Value>) -> u64 {
    o.iter()
        .map(|(k, x)| len(k).saturating_add(value_bytes(x)))
        .fold(0, u64::saturating_add)
}

fn ids_bytes<'a>(ids: impl IntoIterator<Item = &'a crate::id::Id>) -> u64 {
    ids.into_iter()
        .map(|i| id_bytes(i))
        .fold(0, u64::saturating_add)
}

/// An entity, with everything it holds.
pub fn entity_bytes(e: &Entity) -> u64 {
    let c = &e.components;
    let mut n = ENTITY_BYTES.saturating_add(len(&e.id));
    n = n.saturating_add(
        e.tags
            .iter()
            .map(|t| id_bytes(t))
            .fold(0, u64::saturating_add),
    );
    n = n.saturating_add(map_bytes(&e.props));
    n = n.saturating_add(e.held_by.as_deref().map_or(0, id_bytes));
    n = n.saturating_add(placement_bytes(&e.placement));
    if let Some(k) = &c.container {
        n = n
            .saturating_add(ids_bytes(&k.items))
            .saturating_add(k.visibility.owner().map_or(0, |o| id_bytes(o)));
    }
    if let Some(d) = &c.die {
        n = n
            .saturating_add(d.faces.iter().map(value_bytes).fold(0, u64::saturating_add))
            .saturating_add(value_bytes(&d.value))
            .saturating_add(len(&d.kind));
    }
    if let Some(t) = &c.text {
        n = n.saturating_add(len(t));
    }
    if let Some(s) = &c.snap_point {
        n = n
            .saturating_add(
                s.tags
                    .iter()
                    .map(|t| id_bytes(t))
                    .fold(0, u64::saturating_add),
            )
            .saturating_add(ids_bytes(&s.attached));
    }
    if let Some(z) = &c.zone {
        n = n.saturating_add(ids_bytes(&z.members));
    }
    if let Reveal::Seats(seats) = &e.secrecy.revealed {
        n = n.saturating_add(ids_bytes(seats));
    }
    n
}

/// Where an entity lies: the id of its container, snap point or stack.
pub fn placement_bytes(p: &crate::entity::Placement) -> u64 {
    use crate::entity::Placement;
    match p {
        Placement::World => 0,
        Placement::Container(id) | Placement::Snap(id) | Placement::Stack(id) => id_bytes(id),
    }
}

/// A prompt under its id.
pub fn prompt_bytes(id: &str, p: &Prompt) -> u64 {
    RECORD_BYTES
        .saturating_add(len(id))
        .saturating_add(len(&p.kind))
        .saturating_add(len(&p.player_id))
        .saturating_add(len(&p.title))
        .saturating_add(
            p.choices
                .iter()
                .flatten()
                .map(value_bytes)
                .fold(0, u64::saturating_add),
        )
        .saturating_add(value_bytes(&p.default))
        .saturating_add(value_bytes(&p.response))
}

/// A timer under its id.
pub fn timer_bytes(id: &str, t: &Timer) -> u64 {
    RECORD_BYTES
        .saturating_add(len(id))
        .saturating_add(len(&t.callback))
        .saturating_add(len(&t.script_id))
        .saturating_add(len(&t.binding_id))
        .saturating_add(t.entity_id.as_deref().map_or(0, len))
}

/// A stack under its id.
pub fn stack_bytes(id: &str, s: &Stack) -> u64 {
    SMALL_RECORD_BYTES
        .saturating_add(len(id))
        .saturating_add(ids_bytes(&s.items))
}

/// A player under its id.
pub fn player_bytes(id: &str, p: &Player) -> u64 {
    SMALL_RECORD_BYTES
        .saturating_add(len(id))
        .saturating_add(p.name.as_deref().map_or(0, len))
}

/// A seat and who sits in it.
pub fn seat_bytes(id: &str, occupant: Option<&crate::id::Id>) -> u64 {
    SMALL_RECORD_BYTES
        .saturating_add(len(id))
        .saturating_add(occupant.map_or(0, |o| len(o)))
}

/// A script's storage root under its script id.
pub fn storage_bytes(script: &str, root: &Value) -> u64 {
    len(script).saturating_add(value_bytes(root))
}

impl State {
    /// What the state holds, by the byte budget's measure, counted from
    /// scratch (the room keeps it up to date instead: [`State::held_bytes`]).
    pub fn measure_held(&self) -> u64 {
        let mut n = 0u64;
        let mut add = |x: u64| n = n.saturating_add(x);
        for (k, e) in &self.entities {
            if !self.buried.contains(&k) {
                add(entity_bytes(e));
            }
        }
        for (id, p) in &self.prompts {
            add(prompt_bytes(id, p));
        }
        for (id, t) in &self.timers {
            add(timer_bytes(id, t));
        }
        for (id, s) in &self.stacks {
            add(stack_bytes(id, s));
        }
        for (id, p) in &self.players {
            add(player_bytes(id, p));
        }
        for (id, o) in &self.seats {
            add(seat_bytes(id, o.as_ref()));
        }
        add(map_bytes(&self.settings));
        for (script, root) in &self.storage {
            add(storage_bytes(script, root));
        }
        add(self.match_book.as_deref().map_or(0, len));
        n
    }

    /// What the state holds by the byte budget's measure (docs/lua-api.md,
    /// The byte budget), kept up to date by every transaction.
    pub fn held_bytes(&self) -> u64 {
        self.held
    }

    /// Counts what the state holds afresh (after it was built or restored
    /// other than by transactions).
    pub fn recount_held(&mut self) {
        self.held = self.measure_held();
    }
}
