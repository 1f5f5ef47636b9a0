CREATE ROLE debezium WITH LOGIN REPLICATION PASSWORD 'dbz';
CREATE DATABASE inventory OWNER debezium;
\c inventory
CREATE SCHEMA IF NOT EXISTS inventory AUTHORIZATION debezium;
SET ROLE debezium;
CREATE TABLE inventory.customers (
  id SERIAL PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE,
  balance NUMERIC(10,2),
  updated_at TIMESTAMPTZ DEFAULT now()
);
ALTER TABLE inventory.customers REPLICA IDENTITY FULL;
INSERT INTO inventory.customers (first_name,last_name,email,balance) VALUES
 ('Sally','Thomas','sally@example.com',10.50),('George','Bailey','gbailey@example.com',20.00);

-- A composite key, primary-key updates, REPLICA IDENTITY DEFAULT (the before image holds only the key).
CREATE TABLE inventory.orders (
  order_id BIGINT NOT NULL,
  line_no INTEGER NOT NULL,
  customer_id INTEGER,
  sku VARCHAR(32) NOT NULL,
  quantity SMALLINT NOT NULL,
  unit_price NUMERIC(12,2) NOT NULL,
  weight_kg DOUBLE PRECISION,
  ordered_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  ship_date DATE,
  shipped BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (order_id, line_no)
);

-- Values stored out of line (TOAST) under REPLICA IDENTITY DEFAULT: an update that leaves
-- body or blob alone reaches Debezium without them (the unavailable-value placeholder).
CREATE TABLE inventory.documents (
  doc_id UUID PRIMARY KEY,
  title TEXT NOT NULL,
  body TEXT,
  blob BYTEA,
  tags TEXT[],
  meta JSONB,
  version INTEGER NOT NULL DEFAULT 1,
  edited_at TIMESTAMP
);

-- Every table of the schema, present and future (FOR TABLES IN SCHEMA needs a superuser).
RESET ROLE;
CREATE PUBLICATION dbz_publication FOR TABLES IN SCHEMA inventory;
