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
CREATE PUBLICATION dbz_publication FOR TABLE inventory.customers;
