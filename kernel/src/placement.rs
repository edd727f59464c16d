//! Exclusive placement: detaching, snap and stack resolution, zones.
//!
//! An entity is in exactly one of: the world, one container, one snap point,
//! one stack. Every transition goes through these helpers so the events and
//! the zone overlay are always produced the same way.

use crate::event::EventKind;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, EntityKey, Id, Placement, Stack, State};
use crate::transform::Vec3;
use crate::txn::Txn;

/// Rejects with `not_stack_top` when `e` is in a stack below its top.
pub(crate) fn need_stack_top(state: &State, e: &Entity) -> Result<(), Rejection> {
    if let Placement::Stack(sid) = &e.placement {
        let top = state.stacks.get(sid).and_then(|s| s.items.last());
        if top != Some(&e.id) {
            return reject(
                RejectCode::NotStackTop,
                format!("entity \"{}\" is not the top of stack \"{sid}\"", e.id),
            );
        }
    }
    Ok(())
}

/// Leaves the current placement for the world, emitting `container.removed`,
/// `snap.detached`, or `stack.changed` / `stack.dissolved`. The caller has
/// checked that a stack member is its stack's top.
pub(crate) fn detach(txn: &mut Txn<'_>, key: EntityKey) {
    let Some(e) = txn.state().get(key) else {
        return;
    };
    let id = e.id.clone();
    match e.placement.clone() {
        Placement::World => return,
        Placement::Container(cid) => {
            let Some(ckey) = txn.state().key(&cid) else {
                return;
            };
            let mut index = 0;
            let at = txn
                .state()
                .get(ckey)
                .and_then(|c| c.components.container.as_ref())
                .and_then(|c| c.items.iter().position(|x| *x == id));
            if let Some(i) = at {
                txn.item_remove(ckey, i);
                index = i as u64;
            }
            txn.emit(EventKind::ContainerRemoved {
                container_id: cid,
                entity_id: id,
                index,
            });
        }
        Placement::Snap(sid) => {
            if let Some(skey) = txn.state().key(&sid) {
                if let Some(s) = txn
                    .entity_mut(skey)
                    .and_then(|s| s.components.snap_point.as_mut())
                {
                    s.attached.retain(|x| *x != id);
                }
            }
            txn.emit(EventKind::SnapDetached {
                snap_point_id: sid,
                entity_id: id,
            });
        }
        Placement::Stack(sid) => {
            let mut items = txn
                .state()
                .stacks
                .get(&sid)
                .map(|s| s.items.clone())
                .unwrap_or_default();
            debug_assert_eq!(items.last(), Some(&id), "only a stack top leaves its stack");
            items.retain(|x| *x != id);
            remove_from_stack_emit(txn, sid, items);
        }
    }
    txn.set_placement(key, Placement::World);
}

/// Stores a stack's remaining items, or deletes it when none remain, with
/// the matching event.
pub(crate) fn remove_from_stack_emit(txn: &mut Txn<'_>, sid: Id, items: Vec<Id>) {
    if items.is_empty() {
        txn.set_stack(sid.clone(), None);
        txn.emit(EventKind::StackDissolved { stack_id: sid });
    } else {
        txn.set_stack(
            sid.clone(),
            Some(Stack {
                items: items.clone(),
            }),
        );
        txn.emit(EventKind::StackChanged {
            stack_id: sid,
            items,
        });
    }
}

/// Puts entity `key` (id `eid`) on top of stack `sid` and emits
/// `stack.changed`.
pub(crate) fn push_onto_stack(txn: &mut Txn<'_>, sid: Id, key: EntityKey, eid: Id) {
    let mut items = txn
        .state()
        .stacks
        .get(&sid)
        .map(|s| s.items.clone())
        .unwrap_or_default();
    items.push(eid);
    txn.set_stack(
        sid.clone(),
        Some(Stack {
            items: items.clone(),
        }),
    );
    txn.set_placement(key, Placement::Stack(sid.clone()));
    txn.emit(EventKind::StackChanged {
        stack_id: sid,
        items,
    });
}

/// Whether `e` may attach to snap point `snap` by tags: the snap point has
/// no tags, or shares at least one with the entity.
pub(crate) fn tags_match(snap_tags: &[String], e: &Entity) -> bool {
    snap_tags.is_empty() || snap_tags.iter().any(|t| e.tags.binary_search(t).is_ok())
}

/// The nearest compatible snap point for `e` dropped at `p`: within its
/// radius, capacity left, tags matching; distance ties by id.
pub(crate) fn snap_target(state: &State, e: &Entity, p: Vec3) -> Option<Id> {
    let mut best: Option<(f64, Id)> = None;
    for sid in state.spatial().snap_candidates(p) {
        if sid == e.id {
            continue;
        }
        let Some(snap) = state.entity(&sid) else {
            continue;
        };
        let (Some(sp), Some(t)) = (&snap.components.snap_point, &snap.components.transform) else {
            continue;
        };
        if matches!(snap.placement, Placement::Container(_)) {
            continue;
        }
        let d2 = dist2(t.position, p);
        if d2 > sp.radius * sp.radius {
            continue;
        }
        if sp.capacity.is_some_and(|c| sp.attached.len() as u64 >= c) || !tags_match(&sp.tags, e) {
            continue;
        }
        let better = match &best {
            None => true,
            Some((bd, bid)) => d2 < *bd || (d2 == *bd && sid < *bid),
        };
        if better {
            best = Some((d2, sid));
        }
    }
    best.map(|(_, id)| id)
}

fn dist2(a: Vec3, b: Vec3) -> f64 {
    let (dx, dy, dz) = (a.x - b.x, a.y - b.y, a.z - b.z);
    dx * dx + dy * dy + dz * dz
}

/// Where an exact-position drop stacks.
pub(crate) enum StackTarget {
    /// Extend this existing stack (through its top).
    Existing(Id),
    /// Start a new two-item stack on this world entity.
    New(Id),
}

/// The first eligible exact-position stack target in EntityId order: an
/// enabled stackable, unheld entity at exactly `p` that is in the world or
/// is the top of its stack.
pub(crate) fn stack_target(state: &State, e: &Entity, p: Vec3) -> Option<StackTarget> {
    if !e.components.stackable.is_some_and(|s| s.enabled) {
        return None;
    }
    for cid in state.spatial().at(p) {
        if *cid == e.id {
            continue;
        }
        let Some(c) = state.entity(cid) else { continue };
        if !c.components.stackable.is_some_and(|s| s.enabled) || c.held_by.is_some() {
            continue;
        }
        match &c.placement {
            Placement::World => return Some(StackTarget::New(c.id.clone())),
            Placement::Stack(sid) => {
                let top = state.stacks.get(sid).and_then(|s| s.items.last());
                if top == Some(&c.id) {
                    return Some(StackTarget::Existing(sid.clone()));
                }
            }
            _ => {}
        }
    }
    None
}

/// `stack_<actionId>`, or with the first unused numeric suffix
/// (`stack_<actionId>_1`, `_2`, …) when that id is taken by a stack or an
/// entity.
pub(crate) fn new_stack_id(state: &State, action_id: &str) -> Id {
    let base = format!("stack_{action_id}");
    let taken = |id: &str| state.stacks.contains_key(id) || state.entity(id).is_some();
    if !taken(&base) {
        return Id::from(base);
    }
    let mut n = 1u64;
    loop {
        let candidate = format!("{base}_{n}");
        if !taken(&candidate) {
            return Id::from(candidate);
        }
        n += 1;
    }
}

/// Recomputes zone membership for the entities whose placement or position
/// changed, zones in ascending id order and entities in ascending id order
/// within each zone, emitting `zone.left` / `zone.entered`. A zone that
/// itself moved is recomputed against every entity.
pub(crate) fn recompute_zones(txn: &mut Txn<'_>, changed: &[EntityKey]) {
    if txn.state().spatial().zones().is_empty() {
        return;
    }
    let mut ids: Vec<Id> = changed
        .iter()
        .filter_map(|k| txn.state().get(*k).map(|e| e.id.clone()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let zones: Vec<Id> = txn.state().spatial().zones().to_vec();
    for zid in zones {
        let changes = zone_changes(txn.state(), &zid, &ids);
        let Some(zkey) = txn.state().key(&zid) else {
            continue;
        };
        for (id, inside) in changes {
            txn.set_zone_member(zkey, &id, inside);
            let kind = if inside {
                EventKind::ZoneEntered {
                    zone_id: zid.clone(),
                    entity_id: id,
                }
            } else {
                EventKind::ZoneLeft {
                    zone_id: zid.clone(),
                    entity_id: id,
                }
            };
            txn.emit(kind);
        }
    }
}

/// Membership changes of zone `zid` for the changed entities `ids` (sorted),
/// in id order: `(entity, now inside)`. Reads the stored members in place.
fn zone_changes(state: &State, zid: &Id, ids: &[Id]) -> Vec<(Id, bool)> {
    let Some(zone) = state.entity(zid) else {
        return Vec::new();
    };
    let stored: &[Id] = zone.components.zone.as_ref().map_or(&[], |z| &z.members);
    let mut changes = Vec::new();
    if ids.binary_search(zid).is_ok() {
        diff_sorted(stored, &state.zone_members_fresh(zid), &mut changes);
        return changes;
    }
    for id in ids {
        let inside = state
            .entity(id)
            .and_then(State::zone_position)
            .is_some_and(|p| State::zone_contains(zone, p));
        if inside != stored.binary_search(id).is_ok() {
            changes.push((id.clone(), inside));
        }
    }
    changes
}

/// Entries of `new` not in `old` (entered) and of `old` not in `new` (left),
/// merged in id order. Both inputs are sorted.
fn diff_sorted(old: &[Id], new: &[Id], out: &mut Vec<(Id, bool)>) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                out.push((a.clone(), false));
                i += 1;
            }
            (Some(_), Some(b)) => {
                out.push((b.clone(), true));
                j += 1;
            }
            (Some(a), None) => {
                out.push((a.clone(), false));
                i += 1;
            }
            (None, Some(b)) => {
                out.push((b.clone(), true));
                j += 1;
            }
            (None, None) => break,
        }
    }
}
