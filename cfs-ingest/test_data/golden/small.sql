-- Schema of a small shop.
SET search_path = shop, public;

CREATE SCHEMA shop;

-- Customers, one row per account.
-- Email addresses are unique.
CREATE TABLE IF NOT EXISTS shop.customers (
    id bigserial PRIMARY KEY,
    email text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

/* Orders placed by customers. */
CREATE TABLE "order" (
    id bigint PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES shop.customers (id),
    total numeric(12, 2) NOT NULL
);

CREATE INDEX order_customer_idx ON "order" (customer_id);
CREATE UNIQUE INDEX customers_email_lower ON shop.customers (lower(email));

CREATE TYPE order_state AS ENUM ('open', 'paid', 'shipped');
CREATE TYPE money_pair AS (amount numeric, currency text);

CREATE SEQUENCE invoice_number START 1000;

-- Customers with at least one order.
CREATE VIEW active_customers AS
SELECT c.* FROM shop.customers c
WHERE EXISTS (SELECT 1 FROM "order" o WHERE o.customer_id = c.id);

CREATE MATERIALIZED VIEW reporting.daily_totals AS
SELECT date_trunc('day', now()) AS day, sum(total) AS total FROM "order";

-- The number of orders a customer placed.
CREATE OR REPLACE FUNCTION shop.order_count(customer bigint)
RETURNS bigint
LANGUAGE sql STABLE
AS $$
  SELECT count(*) FROM "order" WHERE customer_id = customer;
$$;

CREATE FUNCTION touch_created() RETURNS trigger AS $$
BEGIN
  NEW.created_at = now();
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

-- Keeps created_at current.
CREATE TRIGGER customers_touch BEFORE UPDATE ON shop.customers
FOR EACH ROW EXECUTE FUNCTION touch_created();

BEGIN;
CREATE TABLE audit_log (id bigserial, note text);
COMMIT;

INSERT INTO shop.customers (email) VALUES ('a@example.com');
