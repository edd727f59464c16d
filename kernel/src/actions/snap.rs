//! snap.attach.

use crate::action::Action;
use crate::actions::{find, need};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::placement::{detach, need_stack_top, recompute_zones, tags_match};
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{EntityKey, Placement};
use crate::transform::Transform;
use crate::txn::Txn;

/// Distinct ids; an existing snap point and entity; not attached there
/// already; only a stack top leaves its stack; capacity left; a tag in common
/// when the snap point has tags.
pub(crate) fn attach(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["snapPointId", "entityId"])?;
    let snap_id = p.str("snapPointId")?;
    let entity_id = p.str("entityId")?;
    if snap_id == entity_id {
        return reject(
            RejectCode::SameEntity,
            format!("an entity cannot attach to itself (\"{snap_id}\")"),
        );
    }
    let state = txn.state();
    let (skey, snap) = find(state, snap_id, "snapPointId")?;
    need(snap.components.snap_point.is_some(), snap, "snap_point")?;
    let (key, e) = find(state, entity_id, "entityId")?;
    if e.placement == Placement::Snap(snap.id.clone()) {
        return reject(
            RejectCode::AlreadyAttached,
            format!("\"{entity_id}\" is already attached to \"{snap_id}\""),
        );
    }
    need_stack_top(state, e)?;
    let Some(sp) = &snap.components.snap_point else {
        return Ok(());
    };
    if let Some(cap) = sp.capacity {
        if sp.attached.len() as u64 >= cap {
            return reject(
                RejectCode::CapacityExceeded,
                format!("snap point \"{snap_id}\" is full ({cap})"),
            );
        }
    }
    if !tags_match(&sp.tags, e) {
        return reject(
            RejectCode::TagMismatch,
            format!(
                "\"{entity_id}\" has none of the tags snap point \"{snap_id}\" accepts ({})",
                sp.tags.join(", ")
            ),
        );
    }
    detach(txn, key);
    attach_to_snap(txn, key, skey, None);
    recompute_zones(txn, &[key]);
    Ok(())
}

/// Attaches `key` to snap point `skey` (attachments in id order) and emits
/// `snap.attached`. When the snap point has a transform, the entity moves to
/// its position (keeping `base`'s — or its own — rotation and scale).
pub(crate) fn attach_to_snap(
    txn: &mut Txn<'_>,
    key: EntityKey,
    skey: EntityKey,
    base: Option<Transform>,
) {
    let state = txn.state();
    let (Some(e), Some(snap)) = (state.get(key), state.get(skey)) else {
        return;
    };
    let eid = e.id.clone();
    let sid = snap.id.clone();
    let aligned = snap.components.transform.map(|st| {
        let mut t = base.or(e.components.transform).unwrap_or_default();
        t.position = st.position;
        t
    });
    if let Some(t) = aligned.or(base) {
        txn.set_transform(key, Some(t));
    }
    if let Some(sp) = txn
        .entity_mut(skey)
        .and_then(|s| s.components.snap_point.as_mut())
    {
        if let Err(i) = sp.attached.binary_search(&eid) {
            sp.attached.insert(i, eid.clone());
        }
    }
    txn.set_placement(key, Placement::Snap(sid.clone()));
    txn.emit(EventKind::SnapAttached {
        snap_point_id: sid,
        entity_id: eid,
    });
}
