-- The CHECK constraints of transactions and quotes, the same rules, one per table, each a call of
-- an immutable function, as 0028 did for the ledger's tables (issue 15 §9, bench/README.md
-- "Quote+execute: each statement's PostgreSQL time, one worker").
--
-- PostgreSQL (15) reads every CHECK constraint of a table back from its stored node text, plans
-- it and compiles it again for each INSERT or UPDATE statement: nothing of it is cached across
-- statements. transactions had 14 constraints and quotes 10, compiled for each of a payment's
-- quote insert, quote claim, transaction insert and status updates. A call of a function with the
-- columns as arguments is one short node text, and the function's body is compiled once per
-- connection. Measured with bench/statement-cpu.mjs (PostgreSQL 15, medians of six rounds), in µs
-- of PostgreSQL CPU: the payment's transaction INSERT 269 → 235, its status UPDATE 193 → 162, the
-- quote's INSERT 163 → 148. The new constraints hold for every row written from now on; the rows
-- already there, which the old constraints checked, are checked again by 0060 (VALIDATE
-- CONSTRAINT, which lets payments go on meanwhile, where adding a checked constraint here would
-- hold the tables' exclusive lock for the whole scan).
--
-- Each function is the AND of the old constraints' expressions, unchanged. A CHECK refuses a row
-- only when its expression is false, and an AND is false exactly when one of its terms is: a term
-- that is null (refund_reason null, say) fails nothing here, as its own constraint did not. Not
-- strict: some arguments are null on most rows.

-- Transactions: a known type, status and environment; a failure reason exactly on FAILED, EXPIRED
-- and REJECTED rows, and never one of the removed reasons (spec §9.4); a refund's status and
-- reference together, each of its status and reason known; both customer columns or neither
-- (0020, the platform's own transfers); no amount below zero.
create function transaction_valid(
  type text, status text, environment text, failure_reason text,
  refund_status text, refund_reference text, refund_reason text,
  customer_id uuid, platform_customer_id text,
  sent_amount bigint, total_sending_amount bigint, received_amount bigint, fees bigint, platform_fees bigint
) returns boolean language plpgsql immutable parallel safe as $$
begin
  return type in ('OUTGOING', 'INCOMING')
     and status in ('CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED')
     and environment in ('sandbox', 'production')
     and (status in ('FAILED', 'EXPIRED', 'REJECTED')) = (failure_reason is not null)
     and (failure_reason is null or failure_reason not in ('EXECUTION_FAILED_POST_DEBIT', 'SETTLEMENT_FAILED', 'TIMEOUT', 'MANUAL_REFUND'))
     and (refund_status is null) = (refund_reference is null)
     and refund_status in ('PENDING', 'COMPLETED', 'FAILED')
     and refund_reason in ('TRANSACTION_FAILED', 'USER_CANCELLATION', 'TIMEOUT')
     and (customer_id is null) = (platform_customer_id is null)
     and sent_amount >= 0 and total_sending_amount >= 0 and received_amount >= 0 and fees >= 0 and platform_fees >= 0;
end
$$;

-- Quotes: the total is the amount sent plus both fees (first: on a sum past bigint, the error
-- 22003 is raised as before, where the other terms could otherwise refuse the row first); known
-- source, destination and locked side; a destination account on every quote but a UMA address's
-- (0021: the receiving VASP holds that account); positive amounts, fees not below zero.
create function quote_valid(
  source_kind text, destination_kind text, destination_account_id uuid, locked_side text,
  locked_amount bigint, sent_amount bigint, service_fees bigint, platform_fees bigint,
  total_sending_amount bigint, received_amount bigint
) returns boolean language plpgsql immutable parallel safe as $$
begin
  return total_sending_amount = sent_amount + service_fees + platform_fees
     and source_kind in ('INTERNAL_ACCOUNT', 'EXTERNAL_ACCOUNT', 'REALTIME_FUNDING')
     and destination_kind in ('INTERNAL_ACCOUNT', 'EXTERNAL_ACCOUNT', 'UMA_ADDRESS')
     and (destination_kind = 'UMA_ADDRESS') = (destination_account_id is null)
     and locked_side in ('SENDING', 'RECEIVING')
     and locked_amount > 0 and sent_amount > 0 and received_amount > 0
     and service_fees >= 0 and platform_fees >= 0;
end
$$;

alter table transactions
  drop constraint transactions_type_check,
  drop constraint transactions_status_check,
  drop constraint transactions_environment_check,
  drop constraint transactions_check,
  drop constraint transactions_failure_reason_check,
  drop constraint transactions_check1,
  drop constraint transactions_refund_status_check,
  drop constraint transactions_refund_reason_check,
  drop constraint transactions_customer_pair,
  drop constraint transactions_sent_amount_check,
  drop constraint transactions_total_sending_amount_check,
  drop constraint transactions_received_amount_check,
  drop constraint transactions_fees_check,
  drop constraint transactions_platform_fees_check,
  add constraint transactions_valid
    check (transaction_valid(type, status, environment, failure_reason, refund_status, refund_reference, refund_reason,
                             customer_id, platform_customer_id, sent_amount, total_sending_amount, received_amount, fees, platform_fees)) not valid;

alter table quotes
  drop constraint quotes_check,
  drop constraint quotes_source_kind_check,
  drop constraint quotes_destination_kind_check,
  drop constraint quotes_uma_has_no_account,
  drop constraint quotes_locked_side_check,
  drop constraint quotes_locked_amount_check,
  drop constraint quotes_sent_amount_check,
  drop constraint quotes_received_amount_check,
  drop constraint quotes_service_fees_check,
  drop constraint quotes_platform_fees_check,
  add constraint quotes_valid
    check (quote_valid(source_kind, destination_kind, destination_account_id, locked_side, locked_amount, sent_amount,
                       service_fees, platform_fees, total_sending_amount, received_amount)) not valid;
