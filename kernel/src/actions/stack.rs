//! stack.create, stack.add, stack.merge, stack.dissolve, stack.remove_top.

use crate::action::Action;
use crate::actions::{find, need, need_enabled};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::placement::{push_onto_stack, recompute_zones, remove_from_stack_emit};
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, EntityKey, Id, Placement, Stack, State};
use crate::txn::Txn;

fn find_stack<'a>(state: &'a State, id: &str, field: &str) -> Result<(Id, &'a Stack), Rejection> {
    match state.stacks.get_key_value(id) {
        Some((k, s)) => Ok((k.clone(), s)),
        None => reject(
            RejectCode::StackNotFound,
            format!("payload.{field}: no stack \"{id}\""),
        ),
    }
}

/// An enabled stackable entity currently in the world.
fn need_stackable_in_world(e: &Entity) -> Result<(), Rejection> {
    need(e.components.stackable.is_some(), e, "stackable")?;
    need_enabled(
        e.components.stackable.is_some_and(|s| s.enabled),
        e,
        "stackable",
    )?;
    if e.placement != Placement::World {
        return reject(
            RejectCode::NotInWorld,
            format!(
                "entity \"{}\" is not in the world ({:?})",
                e.id, e.placement
            ),
        );
    }
    Ok(())
}

fn place_all(txn: &mut Txn<'_>, keys: &[EntityKey], p: &Placement) {
    for k in keys {
        txn.set_placement(*k, p.clone());
    }
}

/// A new id and at least two unique, enabled stackable entities in the
/// world, bottom to top.
pub(crate) fn create(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["stackId", "items"])?;
    let stack_id = p.id("stackId")?;
    let items = p.str_list("items")?;
    let state = txn.state();
    if state.stacks.contains_key(stack_id) {
        return reject(
            RejectCode::StackExists,
            format!("stack \"{stack_id}\" already exists"),
        );
    }
    if items.len() < 2 {
        return reject(RejectCode::TooFewItems, "a stack needs at least two items");
    }
    let mut keys = Vec::with_capacity(items.len());
    let mut ids = Vec::with_capacity(items.len());
    for (i, id) in items.iter().enumerate() {
        if items[..i].contains(id) {
            return reject(
                RejectCode::DuplicateItem,
                format!("\"{id}\" is listed twice"),
            );
        }
        let (k, e) = find(state, id, "items")?;
        need_stackable_in_world(e)?;
        keys.push(k);
        ids.push(e.id.clone());
    }
    let sid = Id::from(stack_id);
    txn.set_stack(sid.clone(), Some(Stack { items: ids.clone() }));
    place_all(txn, &keys, &Placement::Stack(sid.clone()));
    txn.emit(EventKind::StackCreated {
        stack_id: sid,
        items: ids,
    });
    recompute_zones(txn, &keys);
    Ok(())
}

/// An existing stack and an enabled stackable entity in the world, which
/// becomes the top.
pub(crate) fn add(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["stackId", "entityId"])?;
    let stack_id = p.str("stackId")?;
    let entity_id = p.str("entityId")?;
    let state = txn.state();
    let (sid, _) = find_stack(state, stack_id, "stackId")?;
    let (key, e) = find(state, entity_id, "entityId")?;
    need_stackable_in_world(e)?;
    let eid = e.id.clone();
    push_onto_stack(txn, sid, key, eid);
    recompute_zones(txn, &[key]);
    Ok(())
}

/// Two distinct stacks: the source's items go on top of the target in order,
/// the source is deleted.
pub(crate) fn merge(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["targetStackId", "sourceStackId"])?;
    let target_id = p.str("targetStackId")?;
    let source_id = p.str("sourceStackId")?;
    if target_id == source_id {
        return reject(
            RejectCode::InvalidValue,
            format!("targetStackId and sourceStackId must differ (both \"{target_id}\")"),
        );
    }
    let state = txn.state();
    let (tid, target) = find_stack(state, target_id, "targetStackId")?;
    let (sid, source) = find_stack(state, source_id, "sourceStackId")?;
    let moved: Vec<Id> = source.items.clone();
    let keys: Vec<EntityKey> = moved.iter().filter_map(|id| state.key(id)).collect();
    let mut items = target.items.clone();
    items.extend(moved);
    txn.set_stack(
        tid.clone(),
        Some(Stack {
            items: items.clone(),
        }),
    );
    txn.set_stack(sid.clone(), None);
    place_all(txn, &keys, &Placement::Stack(tid.clone()));
    txn.emit(EventKind::StackChanged {
        stack_id: tid,
        items,
    });
    txn.emit(EventKind::StackDissolved { stack_id: sid });
    recompute_zones(txn, &keys);
    Ok(())
}

/// Deletes the stack record; its entities stay, now in the world.
pub(crate) fn dissolve(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["stackId"])?;
    let stack_id = p.str("stackId")?;
    let state = txn.state();
    let (sid, stack) = find_stack(state, stack_id, "stackId")?;
    let keys: Vec<EntityKey> = stack.items.iter().filter_map(|id| state.key(id)).collect();
    txn.set_stack(sid.clone(), None);
    place_all(txn, &keys, &Placement::World);
    txn.emit(EventKind::StackDissolved { stack_id: sid });
    recompute_zones(txn, &keys);
    Ok(())
}

/// Removes the top item into the world; the last item dissolves the stack.
pub(crate) fn remove_top(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["stackId"])?;
    let stack_id = p.str("stackId")?;
    let state = txn.state();
    let (sid, stack) = find_stack(state, stack_id, "stackId")?;
    let mut items = stack.items.clone();
    let Some(top) = items.pop() else {
        return reject(
            RejectCode::TooFewItems,
            format!("stack \"{stack_id}\" is empty"),
        );
    };
    let key = state.key(&top);
    remove_from_stack_emit(txn, sid, items);
    if let Some(k) = key {
        txn.set_placement(k, Placement::World);
        recompute_zones(txn, &[k]);
    }
    Ok(())
}
