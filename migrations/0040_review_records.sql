-- What a review has read, kept where the rules that depend on it are checked
-- (verifications/README.md, documents/README.md, customers/README.md):
--
-- documents.submitted_at    when a review first read the document. From then on DELETE is 409:
--                           upstream's "already submitted for verification", and the record of
--                           what a verdict was given on.
-- documents.review_verdict  what the latest finished review said of the document's current file:
--                           REJECTED (named in the verdict's errors: replace it with PUT), ACCEPTED
--                           (PUT is 409: upload a new document instead), or null (not judged yet,
--                           or replaced since).
-- customers.under_review_since
--                           set while a verification of the customer is IN_PROGRESS or
--                           PENDING_MANUAL_REVIEW: the profile and the beneficial owners it reads
--                           cannot change meanwhile (409).
alter table documents
  add column submitted_at timestamptz,
  add column review_verdict text check (review_verdict in ('ACCEPTED', 'REJECTED'));

alter table customers add column under_review_since timestamptz;

-- Existing rows. A verification read its customer's documents unless it answered RESOLVE_ERRORS
-- for missing requirements alone (no entry of a document review, i.e. none with a `code`); a
-- document was read by it when it existed by the verification's last change. The verdict on a
-- document's current file is the one of the latest verification that read it, if that one is
-- decided and the file was not replaced after it.
with holders as (
  select d.id, d.created_at, d.updated_at, coalesce(o.customer_id, d.holder_id) as customer_id
    from documents d
    left join beneficial_owners o on d.holder_type = 'BeneficialOwner' and o.id = d.holder_id
),
reviews as (
  select v.id, v.customer_id, v.status, v.errors, v.created_at, v.updated_at
    from verifications v
   where v.status <> 'RESOLVE_ERRORS'
      or exists (select 1 from jsonb_array_elements(v.errors) e where e ->> 'code' is not null)
),
reads as (
  select h.id as document_id, h.updated_at as document_updated_at, r.id as review_id, r.status, r.errors,
         r.updated_at as review_updated_at, greatest(r.created_at, h.created_at) as read_at
    from holders h
    join reviews r on r.customer_id = h.customer_id and h.created_at <= r.updated_at
),
firsts as (
  select document_id, min(read_at) as submitted_at from reads group by document_id
),
latest as (
  select distinct on (document_id) document_id, document_updated_at, status, errors, review_updated_at
    from reads
   order by document_id, review_id desc
)
update documents d
   set submitted_at = f.submitted_at,
       review_verdict = case
         when l.status not in ('APPROVED', 'REJECTED', 'RESOLVE_ERRORS') or l.document_updated_at > l.review_updated_at then null
         when exists (select 1 from jsonb_array_elements(l.errors) e where e ->> 'resourceId' = 'Document:' || d.id::text) then 'REJECTED'
         else 'ACCEPTED'
       end
  from firsts f
  join latest l on l.document_id = f.document_id
 where d.id = f.document_id;

update customers c
   set under_review_since = o.since
  from (select customer_id, min(created_at) as since
          from verifications
         where status in ('IN_PROGRESS', 'PENDING_MANUAL_REVIEW')
         group by customer_id) o
 where c.id = o.customer_id;
