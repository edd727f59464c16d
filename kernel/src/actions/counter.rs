//! counter.set, counter.add.

use crate::action::Action;
use crate::actions::{find, need};
use crate::event::EventKind;
use crate::payload::Payload;
use crate::reject::{reject, RejectCode, Rejection};
use crate::txn::Txn;

/// Sets the value, clamped to min/max, `-0` normalized.
pub(crate) fn set(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "value"])?;
    let entity_id = p.str("entityId")?;
    let value = p.num("value")?;
    change(txn, entity_id, |_| Ok(value))
}

/// Adds a (possibly negative) amount; the pre-clamp sum must be finite.
pub(crate) fn add(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["entityId", "amount"])?;
    let entity_id = p.str("entityId")?;
    let amount = p.num("amount")?;
    change(txn, entity_id, |previous| {
        let sum = previous + amount;
        if sum.is_finite() {
            Ok(sum)
        } else {
            reject(
                RejectCode::NonFiniteResult,
                format!("{previous} + {amount} is not a finite number"),
            )
        }
    })
}

fn change(
    txn: &mut Txn<'_>,
    entity_id: &str,
    next: impl FnOnce(f64) -> Result<f64, Rejection>,
) -> Result<(), Rejection> {
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.counter.is_some(), e, "counter")?;
    let Some(counter) = e.components.counter else {
        return Ok(());
    };
    let previous = counter.value;
    let value = counter.clamp(next(previous)?);
    let eid = e.id.clone();
    txn.set_counter(key, value);
    txn.emit(EventKind::CounterChanged {
        entity_id: eid,
        value,
        previous,
    });
    Ok(())
}
