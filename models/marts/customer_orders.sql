{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key='order_id',
        on_schema_change='append_new_columns'
    )
}}

-- Orders with their customer, built on the mirrored tables sales.orderlines and dbo.customers.
-- Each run recomputes the orders and merges them by order_id. A column added to the final
-- select is added to the table on the next run (on_schema_change='append_new_columns'); rows
-- are written by column name, so the order of the select list does not matter.
with

order_lines as (
    select
        orderid as order_id,
        customerid as customer_id,
        amount
    from {{ ref('sales__orderlines') }}
),

customers as (
    select
        customerid as customer_id,
        name as customer_name
    from {{ ref('dbo__customers') }}
),

orders as (
    select
        order_id,
        min(customer_id) as customer_id,
        count(*) as order_lines,
        sum(amount) as amount
    from order_lines
    group by order_id
)

select
    orders.order_id,
    orders.customer_id,
    customers.customer_name,
    orders.order_lines,
    orders.amount
from orders
left join customers on orders.customer_id = customers.customer_id
