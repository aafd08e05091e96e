-- A production platform's umaDomain is its own (modules/config README): incoming UMA requests for
-- a domain go to the platforms holding it, so a second production holder could take the first
-- one's payments by creating a customer of the same address.

-- The environment is fixed at creation; the config row carries it so that an index can say
-- "production", and the foreign key keeps it the platform's.
alter table platforms add constraint platforms_id_environment unique (id, environment);
alter table platform_configs add column environment text;
update platform_configs c set environment = p.environment from platforms p where p.id = c.platform_id;
alter table platform_configs alter column environment set not null;
alter table platform_configs add constraint platform_configs_platform_environment
  foreign key (platform_id, environment) references platforms (id, environment);

-- When the platform set its current umaDomain: among sandbox platforms sharing a domain, the
-- first to set it receives for an address several of them have (config repo
-- `platformsWithUmaDomain`). Rows written before know no better time than their creation.
alter table platform_configs add column uma_domain_claimed_at timestamptz;
update platform_configs set uma_domain_claimed_at = created_at where uma_domain is not null;
alter table platform_configs add constraint platform_configs_uma_domain_claimed
  check ((uma_domain is null) = (uma_domain_claimed_at is null));

-- Production platforms already sharing a domain: which one is its owner nothing stored says
-- (the oldest may be the one that took it), so none keeps it, and none receives for it until
-- the operator gives it back to its owner (PATCH /config with the owner's token). What each
-- held is kept here for that.
create table uma_domains_released (
  platform_id uuid primary key references platforms (id),
  uma_domain text not null,
  released_at timestamptz not null
);
with shared as (
  select c.platform_id, c.uma_domain from platform_configs c
  where c.environment = 'production' and c.uma_domain is not null
    and exists (
      select 1 from platform_configs o
      where o.environment = 'production' and o.platform_id <> c.platform_id and lower(o.uma_domain) = lower(c.uma_domain)
    )
)
insert into uma_domains_released (platform_id, uma_domain, released_at) select platform_id, uma_domain, now() from shared;
update platform_configs c set uma_domain = null, uma_domain_claimed_at = null, updated_at = now()
  from uma_domains_released r where r.platform_id = c.platform_id;
-- Processes already running drop what they cached of those configurations.
select pg_notify('corridor_platform_config_changed', platform_id::text) from uma_domains_released;

create unique index platform_configs_production_uma_domain on platform_configs (lower(uma_domain))
  where environment = 'production' and uma_domain is not null;
