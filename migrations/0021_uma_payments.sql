-- UMA money (issue 17): the incoming transaction a pay request opened, and the sender's side of a
-- payment to a UMA address.

-- The INCOMING transaction (transactions.id) the receiving customer sees for this invoice.
alter table uma_incoming_payments add column transaction_id uuid;

-- A pay request this Corridor sent for a quote to a UMA address: the receiving VASP's invoice and
-- what it converts to. The quote's execution pays the invoice (uma/lightning.ts); once paid, the
-- preimage the receiver released is the proof of payment.
create table uma_outgoing_payments (
  platform_id uuid not null references platforms (id),
  quote_id uuid not null,
  transaction_id uuid,
  receiver_uma_address text not null,
  counterparty_domain text not null,
  invoice text not null,
  payment_hash text not null,
  amount_msats bigint not null check (amount_msats > 0),
  receiving_currency text not null,
  received_amount bigint not null check (received_amount > 0),
  post_transaction_callback text,
  preimage text,
  created_at timestamptz not null,
  primary key (platform_id, quote_id)
);
create unique index uma_outgoing_payments_transaction on uma_outgoing_payments (platform_id, transaction_id) where transaction_id is not null;

-- When the sending VASP's signed post-transaction callback (UMAD-07) arrived for this invoice.
alter table uma_incoming_payments add column sender_confirmed_at timestamptz;

-- Quotes to a UMA address have no destination account: the receiving VASP holds it.
alter table quotes drop constraint quotes_destination_kind_check;
alter table quotes add constraint quotes_destination_kind_check check (destination_kind in ('INTERNAL_ACCOUNT', 'EXTERNAL_ACCOUNT', 'UMA_ADDRESS'));
alter table quotes alter column destination_account_id drop not null;
alter table quotes add constraint quotes_uma_has_no_account check ((destination_kind = 'UMA_ADDRESS') = (destination_account_id is null));
