-- One Lightning invoice is one payment: a quote to a UMA address may not record an invoice that
-- another quote already holds (modules/uma sending.ts `record`, which takes an advisory lock on
-- the payment hash and looks it up here). Not a unique index: rows written before could hold a
-- hash twice (a receiving VASP that handed one invoice out for two quotes), and they stay as
-- they are, the payments they record.
create index uma_outgoing_payments_payment_hash on uma_outgoing_payments (payment_hash);
