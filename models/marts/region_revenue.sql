-- Revenue per sales region.
select
    region,
    count(*) as customers,
    sum(amount) as amount
from {{ ref('customer_revenue') }}
group by region
