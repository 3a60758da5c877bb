-- Revenue per customer, built on the mirrored tables dbo.customers and sales.orderlines.
with

customers as (
    select
        customerid as customer_id,
        name as customer_name,
        country as country_code
    from {{ ref('dbo__customers') }}
),

order_lines as (
    select
        customerid as customer_id,
        orderid as order_id,
        amount
    from {{ ref('sales__orderlines') }}
),

regions as (
    select
        country_code,
        region
    from {{ ref('country_regions') }}
),

revenue as (
    select
        customer_id,
        count(distinct order_id) as orders,
        sum(amount) as amount
    from order_lines
    group by customer_id
)

select
    customers.customer_id,
    customers.customer_name,
    regions.region,
    coalesce(revenue.orders, 0) as orders,
    coalesce(revenue.amount, 0) as amount
from customers
left join regions on customers.country_code = regions.country_code
left join revenue on customers.customer_id = revenue.customer_id
