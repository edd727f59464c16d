//! container.move, container.reorder.

use std::collections::BTreeMap;

use crate::action::Action;
use crate::actions::{find, need};
use crate::event::EventKind;
use crate::host::MoveArgs;
use crate::observe::shown_name;
use crate::payload::{safe_index, Payload};
use crate::placement::recompute_zones;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, EntityKey, Id, Placement, State};
use crate::txn::Txn;

/// Atomic transfer between containers, or between a container and the world
/// (`null`). `from` must match where the entity is; the target must have
/// room and `index` may not exceed its length (a world destination needs
/// index 0).
pub(crate) fn move_entity(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entity", "from", "to", "index"])?;
    let args = MoveArgs {
        entity: p.str("entity")?,
        from: p.str_or_null("from")?,
        to: p.str_or_null("to")?,
        index: p.index("index")?,
    };
    apply_move(txn, args)
}

/// [`move_entity`] after the payload's shape checks: the rules and the
/// mutation.
pub(crate) fn apply_move(txn: &mut Txn<'_>, args: MoveArgs<'_>) -> Result<(), Rejection> {
    let MoveArgs {
        entity: entity_id,
        from,
        to,
        index,
    } = args;
    // Already checked when decoded from a payload; a typed caller's u64
    // gets the same bound.
    safe_index("index", crate::num::count_to_f64(index))?;
    if from == to {
        return reject(RejectCode::SameContainer, "from and to must differ");
    }
    if to.is_none() && index != 0 {
        return reject(
            RejectCode::IndexOutOfRange,
            format!("a world destination requires index 0, got {index}"),
        );
    }
    let state = txn.state();
    let (key, e) = find(state, entity_id, "entity")?;
    let source = check_source(state, e, from)?;
    let target = match to {
        Some(tid) => Some(check_target(state, (key, e), tid, index)?),
        None => None,
    };
    let eid = e.id.clone();
    if let Some((fkey, _, i)) = &source {
        txn.item_remove(*fkey, crate::num::to_usize(*i));
    }
    let placement = match &target {
        Some((tkey, tid)) => {
            txn.item_insert(*tkey, crate::num::to_usize(index), eid.clone());
            Placement::Container(tid.clone())
        }
        None => Placement::World,
    };
    txn.set_placement(key, placement);
    let (from, from_index) = match source {
        Some((_, fid, i)) => (Some(fid), Some(i)),
        None => (None, None),
    };
    txn.emit(EventKind::ContainerMoved {
        entity_id: eid,
        from,
        to: target.map(|(_, tid)| tid),
        index,
        from_index,
    });
    recompute_zones(txn, &[key]);
    Ok(())
}

/// A container's items in a new order (a player sorting a hand): `items`
/// names each of them once. A player may arrange only its own hand — a
/// container private to its seat, or a hand tagged for it (`hand`,
/// `props.owner` its id) — and only in a game of API 3 or later; a script
/// any container (docs/actions.md).
pub(crate) fn reorder(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "items"])?;
    let container_id = p.str("entityId")?;
    let names = p.str_list("items")?;
    let state = txn.state();
    let (key, e) = find(state, container_id, "entityId")?;
    need(e.components.container.is_some(), e, "container")?;
    if let Some(player) = action.source.player_id() {
        if state.api_version < 3 {
            return reject(
                RejectCode::SourceNotAllowed,
                format!(
                    "container.reorder accepts player sources in games of apiVersion 3 or later (this game names {}: docs/lua-api.md, API versions)",
                    state.api_version
                ),
            );
        }
        let seat = state.seat_of(player);
        let private_to_seat = matches!(
            (&e.components.container.as_ref().map(|c| &c.visibility), seat),
            (Some(crate::entity::Visibility::Private(owner)), Some(s)) if owner == s
        );
        let tagged_for_player = state.hand_of(player).is_some_and(|h| h.id == e.id);
        if !private_to_seat && !tagged_for_player {
            return reject(
                RejectCode::NotYours,
                format!(
                    "payload.entityId: the items of \"{}\" are not yours to arrange (a player sorts only its own hand)",
                    e.id
                ),
            );
        }
    }
    let items: &[Id] = e.components.container.as_ref().map_or(&[], |c| &c.items);
    let at: BTreeMap<&str, usize> = items.iter().enumerate().map(|(i, id)| (&**id, i)).collect();
    let mut listed = vec![false; items.len()];
    let mut order = Vec::with_capacity(items.len());
    for name in &names {
        let Some(&i) = at.get(name) else {
            return reject(
                RejectCode::SourceMismatch,
                format!(
                    "payload.items: \"{}\" is not in \"{}\"",
                    shown_name(name),
                    e.id
                ),
            );
        };
        if std::mem::replace(&mut listed[i], true) {
            return reject(
                RejectCode::DuplicateItem,
                format!("payload.items: \"{name}\" is listed twice"),
            );
        }
        order.push(items[i].clone());
    }
    if order.len() < items.len() {
        return reject(
            RejectCode::TooFewItems,
            format!(
                "payload.items names {} of the {} items of \"{}\": list each of them once",
                order.len(),
                items.len(),
                e.id
            ),
        );
    }
    let cid = e.id.clone();
    txn.add_work(order.len());
    if let Some(c) = txn
        .entity_mut(key)
        .and_then(|e| e.components.container.as_mut())
    {
        c.items.clone_from(&order);
    }
    txn.emit(EventKind::ContainerReordered {
        container_id: cid,
        items: order,
    });
    Ok(())
}

/// The source container (handle, id) and the entity's index in it, or
/// `None` for the world.
fn check_source(
    state: &State,
    e: &Entity,
    from: Option<&str>,
) -> Result<Option<(EntityKey, Id, u64)>, Rejection> {
    let Some(fid) = from else {
        if e.placement != Placement::World {
            return reject(
                RejectCode::SourceMismatch,
                format!(
                    "from is null (the world) but \"{}\" is placed {:?}",
                    e.id, e.placement
                ),
            );
        }
        return Ok(None);
    };
    let (fkey, source) = find(state, fid, "from")?;
    need(source.components.container.is_some(), source, "container")?;
    let index = source
        .components
        .container
        .as_ref()
        .and_then(|c| position(&c.items, &e.id));
    match index {
        Some(i) if matches!(&e.placement, Placement::Container(c) if *c == source.id) => {
            Ok(Some((fkey, source.id.clone(), i as u64)))
        }
        _ => reject(
            RejectCode::SourceMismatch,
            format!("\"{}\" is not in container \"{fid}\"", e.id),
        ),
    }
}

/// Validates the target container and returns its handle and id.
fn check_target(
    state: &State,
    (key, e): (EntityKey, &Entity),
    tid: &str,
    index: u64,
) -> Result<(EntityKey, Id), Rejection> {
    let (tkey, target) = find(state, tid, "to")?;
    need(target.components.container.is_some(), target, "container")?;
    if holds(state, key, (tkey, target)) {
        return reject(
            RejectCode::ContainerCycle,
            format!(
                "\"{}\" cannot go inside \"{tid}\", which is itself or inside it",
                e.id
            ),
        );
    }
    let len = target
        .components
        .container
        .as_ref()
        .map_or(0, |c| c.items.len()) as u64;
    if let Some(cap) = target
        .components
        .container
        .as_ref()
        .and_then(|c| c.capacity)
    {
        if len >= cap {
            return reject(
                RejectCode::CapacityExceeded,
                format!("container \"{tid}\" is full ({cap})"),
            );
        }
    }
    if index > len {
        return reject(
            RejectCode::IndexOutOfRange,
            format!("index {index} is beyond the end of \"{tid}\" (length {len})"),
        );
    }
    Ok((tkey, target.id.clone()))
}

/// Whether `target` is `outer` or lies (transitively) inside it (compared
/// by handle).
fn holds(state: &State, outer: EntityKey, target: (EntityKey, &Entity)) -> bool {
    let (mut key, mut current) = target;
    for _ in 0..=state.entity_count() {
        if key == outer {
            return true;
        }
        let Placement::Container(parent) = &current.placement else {
            return false;
        };
        match state.key(parent).and_then(|k| state.get(k).map(|p| (k, p))) {
            Some((k, p)) => (key, current) = (k, p),
            None => return false,
        }
    }
    true
}

/// Where `id` is in a container's list: by pointer first (lists share the
/// entities' own ids), by content otherwise.
fn position(items: &[Id], id: &Id) -> Option<usize> {
    items
        .iter()
        .position(|x| std::sync::Arc::ptr_eq(x, id))
        .or_else(|| items.iter().position(|x| x == id))
}
