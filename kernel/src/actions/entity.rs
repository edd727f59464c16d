//! entity.grab, entity.drop, entity.move, entity.flip, entity.set_locked.

use crate::action::Action;
use crate::actions::{find, need, need_enabled, player_id, run_guard};
use crate::event::EventKind;
use crate::host::{GuardKind, ScriptHost};
use crate::payload::Payload;
use crate::placement::{
    detach, need_stack_top, new_stack_id, push_onto_stack, recompute_zones, snap_target,
    stack_target, StackTarget,
};
use crate::reject::{RejectCode, Rejection};
use crate::state::{EntityKey, Placement, Stack};
use crate::transform::Transform;
use crate::txn::Failure;
use crate::txn::Txn;

/// Enabled grabbable, unheld, unlocked, outside a stack or its top; then
/// `can_grab`.
pub(crate) fn grab(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let player = action.source.player_id().unwrap_or_default();
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.grabbable.is_some(), e, "grabbable")?;
    need_enabled(
        e.components.grabbable.is_some_and(|g| g.enabled),
        e,
        "grabbable",
    )?;
    if let Some(holder) = &e.held_by {
        return Err(Rejection::new(
            RejectCode::AlreadyHeld,
            format!("entity \"{entity_id}\" is held by \"{holder}\""),
        )
        .into());
    }
    if e.components.lockable == Some(true) {
        return Err(Rejection::new(
            RejectCode::Locked,
            format!("entity \"{entity_id}\" is locked"),
        )
        .into());
    }
    need_stack_top(txn.state(), e)?;
    let eid = e.id.clone();
    run_guard(txn, host, GuardKind::Grab, player, (key, entity_id), None)?;
    let pid = player_id(txn, player);
    txn.set_held_by(key, Some(pid.clone()));
    txn.emit(EventKind::EntityGrabbed {
        entity_id: eid,
        player_id: pid,
    });
    Ok(())
}

/// Toggles `flipped`; player sources ask `can_flip` first.
pub(crate) fn flip(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.flippable.is_some(), e, "flippable")?;
    let flipped = !e.components.flippable.unwrap_or_default();
    let eid = e.id.clone();
    if let Some(player) = action.source.player_id() {
        run_guard(txn, host, GuardKind::Flip, player, (key, entity_id), None)?;
    }
    txn.set_flipped(key, flipped);
    txn.emit(EventKind::EntityFlipped {
        entity_id: eid,
        flipped,
    });
    Ok(())
}

/// Sets `locked`. The registry's emission matrix gives this action no event.
pub(crate) fn set_locked(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "locked"])?;
    let entity_id = p.str("entityId")?;
    let locked = p.bool("locked")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.lockable.is_some(), e, "lockable")?;
    txn.set_locked(key, locked);
    Ok(())
}

/// The actor must hold it; only a stack top leaves its stack; `can_drop`;
/// detach; then nearest snap point, else exact-position stack, else world;
/// zones; release; `entity.dropped`.
pub(crate) fn drop(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId", "transform"])?;
    let entity_id = p.str("entityId")?;
    let transform = p.transform("transform")?;
    let player = action.source.player_id().unwrap_or_default();
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    if e.held_by.as_deref() != Some(player) {
        return Err(Rejection::new(
            RejectCode::NotHeld,
            format!("player \"{player}\" does not hold entity \"{entity_id}\""),
        )
        .into());
    }
    need_stack_top(txn.state(), e)?;
    let eid = e.id.clone();
    run_guard(
        txn,
        host,
        GuardKind::Drop,
        player,
        (key, entity_id),
        Some(&transform),
    )?;
    let pid = player_id(txn, player);
    detach(txn, key);
    place_dropped(txn, key, transform);
    txn.set_held_by(key, None);
    txn.emit(EventKind::EntityDropped {
        entity_id: eid,
        player_id: pid,
    });
    Ok(())
}

/// The resolution precedence of a drop, after the old placement is gone.
fn place_dropped(txn: &mut Txn<'_>, key: EntityKey, transform: Transform) {
    let state = txn.state();
    let Some(e) = state.get(key) else { return };
    let eid = e.id.clone();
    let pos = transform.position;
    let mut touched = vec![key];
    if let Some(sid) = snap_target(state, e, pos) {
        if let Some(skey) = state.key(&sid) {
            crate::actions::snap::attach_to_snap(txn, key, skey, Some(transform));
        }
    } else if let Some(target) = stack_target(state, e, pos) {
        txn.set_transform(key, Some(transform));
        match target {
            StackTarget::Existing(sid) => push_onto_stack(txn, sid, key, eid),
            StackTarget::New(base) => {
                let sid = new_stack_id(txn.state(), &txn.action_id().to_string());
                let items = vec![base.clone(), eid];
                txn.set_stack(
                    sid.clone(),
                    Some(Stack {
                        items: items.clone(),
                    }),
                );
                if let Some(bkey) = txn.state().key(&base) {
                    txn.set_placement(bkey, Placement::Stack(sid.clone()));
                    touched.push(bkey);
                }
                txn.set_placement(key, Placement::Stack(sid.clone()));
                txn.emit(EventKind::StackCreated {
                    stack_id: sid,
                    items,
                });
            }
        }
    } else {
        txn.set_transform(key, Some(transform));
    }
    recompute_zones(txn, &touched);
}

/// Script/system move: only a stack top; leaves any container, snap point or
/// stack; commits the transform; zones. No snap or stack resolution, and no
/// event of its own (the registry's matrix names none).
pub(crate) fn move_to(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "transform"])?;
    let entity_id = p.str("entityId")?;
    let transform = p.transform("transform")?;
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.transform.is_some(), e, "transform")?;
    need_stack_top(txn.state(), e)?;
    detach(txn, key);
    txn.set_transform(key, Some(transform));
    recompute_zones(txn, &[key]);
    Ok(())
}
