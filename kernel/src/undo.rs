//! Undo records: what a transaction saved before each change, and how each
//! is put back. Rollback applies them in reverse order, so it costs what
//! the transaction touched, never the table size.

use std::collections::BTreeMap;

use crate::digest::{Section, Touch};
use crate::entity::{Secrecy, Trip};
use crate::rng::Rng;
use crate::state::{Entity, EntityKey, Id, Placement, Player, Prompt, Stack, State, Timer};
use crate::transform::Transform;
use crate::value::Value;

/// One reversible change.
#[derive(Debug)]
pub(crate) enum Undo {
    /// A whole-entity snapshot, for structural changes.
    Entity(EntityKey, Box<Entity>),
    Counter(EntityKey, f64),
    DieValue(EntityKey, Value),
    /// A container's items were shuffled with this RNG state: rollback
    /// draws the same swaps again and undoes them in reverse (no copy of
    /// the list is kept).
    Shuffled(EntityKey, Rng),
    /// An item taken out of a container's list at this index.
    ItemRemoved(EntityKey, usize, Id),
    /// An item put into a container's list at this index.
    ItemInserted(EntityKey, usize),
    Flipped(EntityKey, bool),
    /// An entity's secrecy before a trip into a hidden place or a reveal.
    Secrecy(EntityKey, Box<Secrecy>),
    /// An entity's last trip before a new one, when it was revealed to
    /// nobody (the common case: no allocation).
    Trip(EntityKey, Option<Trip>),
    Locked(EntityKey, bool),
    HeldBy(EntityKey, Option<Id>),
    Transform(EntityKey, Option<Transform>),
    Placement(EntityKey, Placement),
    Stack(Id, Option<Stack>),
    Prompt(Id, Option<Prompt>),
    /// An entity added in this transaction (spawn): removed on rollback.
    Inserted(EntityKey),
    /// An entity destroyed in this transaction: its slot is kept until
    /// commit, so rollback brings it back under the same handle.
    Removed(EntityKey),
    Timer(Id, Option<Timer>),
    /// A zone gained (`true`) or lost (`false`) this member.
    ZoneMember(EntityKey, Id, bool),
    Player(Id, Option<Player>),
    Seat(Id, Option<Option<Id>>),
    Settings(BTreeMap<String, Value>),
    Rng(Rng),
    Storage(String, Option<Value>),
}

impl Undo {
    /// What this record says the transaction touched.
    pub(crate) fn touch(&self) -> Touch {
        match self {
            Undo::Entity(k, _)
            | Undo::Counter(k, _)
            | Undo::DieValue(k, _)
            | Undo::Shuffled(k, _)
            | Undo::ItemRemoved(k, _, _)
            | Undo::ItemInserted(k, _)
            | Undo::Flipped(k, _)
            | Undo::Secrecy(k, _)
            | Undo::Trip(k, _)
            | Undo::Locked(k, _)
            | Undo::HeldBy(k, _)
            | Undo::Transform(k, _)
            | Undo::Placement(k, _)
            | Undo::Inserted(k)
            | Undo::Removed(k)
            | Undo::ZoneMember(k, _, _) => Touch::Entity(*k),
            Undo::Stack(id, _) => Touch::Keyed(Section::Stacks, id.clone()),
            Undo::Prompt(id, _) => Touch::Keyed(Section::Prompts, id.clone()),
            Undo::Timer(id, _) => Touch::Keyed(Section::Timers, id.clone()),
            Undo::Player(id, _) => Touch::Keyed(Section::Players, id.clone()),
            Undo::Seat(id, _) => Touch::Keyed(Section::Seats, id.clone()),
            Undo::Storage(script, _) => Touch::Keyed(Section::Storage, Id::from(script.as_str())),
            Undo::Settings(_) => Touch::Settings,
            Undo::Rng(_) => Touch::Rng,
        }
    }

    /// Puts back what this record saved.
    pub(crate) fn apply(self, st: &mut State) {
        match self {
            Undo::Stack(id, prev) => restore(&mut st.stacks, id, prev),
            Undo::Prompt(id, prev) => restore(&mut st.prompts, id, prev),
            Undo::Timer(id, prev) => restore(&mut st.timers, id, prev),
            Undo::Player(id, prev) => restore(&mut st.players, id, prev),
            Undo::Seat(id, prev) => restore(&mut st.seats, id, prev),
            Undo::Storage(k, prev) => {
                st.storage_stamp = crate::state::fresh_storage_stamp();
                restore(&mut st.storage, k, prev);
            }
            Undo::Settings(s) => st.settings = s,
            Undo::Rng(r) => st.rng = r,
            Undo::Inserted(k) => {
                st.remove_live(k);
            }
            Undo::Removed(k) => st.revive(k),
            Undo::Transform(k, t) => st.replace_transform(k, t),
            Undo::Shuffled(k, mut rng) => {
                if let Some(c) = items_of(st, k) {
                    rng.unshuffle(c);
                }
            }
            Undo::ItemRemoved(k, i, id) => {
                if let Some(c) = items_of(st, k) {
                    c.insert(i.min(c.len()), id);
                }
            }
            Undo::ItemInserted(k, i) => {
                if let Some(c) = items_of(st, k) {
                    if i < c.len() {
                        c.remove(i);
                    }
                }
            }
            // The records of one entity's field (the ones matched above
            // restore through the state's own bookkeeping).
            entity_field => {
                if let Touch::Entity(k) = entity_field.touch() {
                    if let Some(e) = st.entity_mut(k) {
                        entity_field.apply_to(e);
                    }
                }
            }
        }
    }

    /// Puts back one entity's saved field.
    fn apply_to(self, e: &mut Entity) {
        match self {
            Undo::Entity(_, saved) => {
                debug_assert_eq!(
                    e.components.transform, saved.components.transform,
                    "transforms change only through set_transform"
                );
                *e = *saved;
            }
            Undo::Counter(_, v) => {
                if let Some(c) = e.components.counter.as_mut() {
                    c.value = v;
                }
            }
            Undo::DieValue(_, v) => {
                if let Some(d) = e.components.die.as_mut() {
                    d.value = v;
                }
            }
            Undo::Flipped(_, v) => e.components.flippable = Some(v),
            Undo::Secrecy(_, s) => e.secrecy = *s,
            Undo::Trip(_, t) => {
                e.secrecy = Secrecy {
                    trip: t,
                    revealed: crate::entity::Reveal::Nobody,
                }
            }
            Undo::Locked(_, v) => e.components.lockable = Some(v),
            Undo::HeldBy(_, v) => e.held_by = v,
            Undo::Placement(_, p) => e.placement = p,
            Undo::ZoneMember(_, id, added) => {
                if let Some(z) = e.components.zone.as_mut() {
                    set_member(&mut z.members, &id, !added);
                }
            }
            _ => {}
        }
    }
}

/// A map entry back to what it was (`None`: absent).
fn restore<K: Ord, V>(map: &mut BTreeMap<K, V>, key: K, prev: Option<V>) {
    match prev {
        Some(v) => map.insert(key, v),
        None => map.remove(&key),
    };
}

/// A container's item list.
fn items_of(st: &mut State, k: EntityKey) -> Option<&mut Vec<Id>> {
    st.entity_mut(k)
        .and_then(|e| e.components.container.as_mut())
        .map(|c| &mut c.items)
}

/// Inserts or removes `id` in a sorted list; whether anything changed.
pub(crate) fn set_member(members: &mut Vec<Id>, id: &Id, inside: bool) -> bool {
    match (members.binary_search(id), inside) {
        (Err(i), true) => {
            members.insert(i, id.clone());
            true
        }
        (Ok(i), false) => {
            members.remove(i);
            true
        }
        _ => false,
    }
}
