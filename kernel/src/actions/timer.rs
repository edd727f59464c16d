//! timer.register, timer.cancel, system.timer_fire.

use crate::action::Action;
use crate::event::{EventKind, TimerTarget};
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Id, Timer};
use crate::txn::Txn;

/// A new id, a positive finite delay, non-empty callback/script/binding.
pub(crate) fn register(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(
        &action.payload,
        &[
            "timerId",
            "delay",
            "callback",
            "scriptId",
            "bindingId",
            "entityId",
        ],
    )?;
    let timer_id = p.id("timerId")?;
    let delay = p.num("delay")?;
    let callback = p.id("callback")?;
    let script_id = p.id("scriptId")?;
    let binding_id = p.id("bindingId")?;
    let entity_id = match p.opt("entityId") {
        None | Some(serde_json::Value::Null) => None,
        Some(_) => Some(p.str("entityId")?),
    };
    if delay <= 0.0 {
        return reject(
            RejectCode::InvalidValue,
            format!("payload.delay must be positive, got {delay}"),
        );
    }
    if txn.state().timers.contains_key(timer_id) {
        return reject(
            RejectCode::TimerExists,
            format!("timer \"{timer_id}\" already exists"),
        );
    }
    let id = Id::from(timer_id);
    txn.set_timer(
        id.clone(),
        Some(Timer {
            delay,
            callback: callback.to_owned(),
            script_id: script_id.to_owned(),
            binding_id: binding_id.to_owned(),
            entity_id: entity_id.map(str::to_owned),
        }),
    );
    txn.emit(EventKind::TimerRegistered {
        timer_id: id,
        delay,
        target: Box::new(TimerTarget {
            callback: callback.to_owned(),
            script_id: script_id.to_owned(),
            binding_id: binding_id.to_owned(),
            entity_id: entity_id.map(str::to_owned),
        }),
    });
    Ok(())
}

fn scheduled(txn: &Txn<'_>, p: &Payload<'_>) -> Result<(Id, Timer), Rejection> {
    let id = p.str("timerId")?;
    match txn.state().timers.get_key_value(id) {
        Some((tid, timer)) => Ok((tid.clone(), timer.clone())),
        _ => reject(
            RejectCode::TimerNotFound,
            format!("no scheduled timer \"{id}\" (never registered, already fired, or canceled)"),
        ),
    }
}

/// A scheduled timer is canceled: it leaves the state (only scheduled
/// timers are kept, so a turn timer per turn does not grow the state).
pub(crate) fn cancel(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["timerId"])?;
    let (id, _) = scheduled(txn, &p)?;
    txn.set_timer(id.clone(), None);
    txn.emit(EventKind::TimerCanceled { timer_id: id });
    Ok(())
}

/// A scheduled timer fires: it leaves the state before `timer.fired` is
/// emitted with its callback and binding identity, so a duplicate or late
/// fire finds no scheduled timer.
pub(crate) fn fire(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["timerId"])?;
    let (id, timer) = scheduled(txn, &p)?;
    txn.set_timer(id.clone(), None);
    txn.emit(EventKind::TimerFired {
        timer_id: id,
        target: Box::new(TimerTarget {
            callback: timer.callback,
            script_id: timer.script_id,
            binding_id: timer.binding_id,
            entity_id: timer.entity_id,
        }),
    });
    Ok(())
}
