-- The stack's MariaDB: the Postgres sample database mirrored (stack/conf/init.sql), and Debezium's user.
CREATE DATABASE inventory;
CREATE USER 'debezium'@'%' IDENTIFIED BY 'dbz';
-- REPLICATION CLIENT is BINLOG MONITOR since 10.5; SELECT/RELOAD/SHOW DATABASES/LOCK TABLES for the snapshot.
GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, LOCK TABLES ON *.* TO 'debezium'@'%';
-- The tests and the demo create and change tables of their own in it.
GRANT ALL PRIVILEGES ON inventory.* TO 'debezium'@'%';
USE inventory;

CREATE TABLE customers (
  id INT AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE,
  balance DECIMAL(10,2),
  updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
INSERT INTO customers (first_name, last_name, email, balance) VALUES
 ('Sally', 'Thomas', 'sally@example.com', 10.50), ('George', 'Bailey', 'gbailey@example.com', 20.00);

-- A composite key and primary-key updates (a delete and a create in the binlog).
CREATE TABLE orders (
  order_id BIGINT NOT NULL,
  line_no INT NOT NULL,
  customer_id INT,
  sku VARCHAR(32) NOT NULL,
  quantity SMALLINT NOT NULL,
  unit_price DECIMAL(12,2) NOT NULL,
  weight_kg DOUBLE,
  ordered_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  ship_date DATE,
  shipped BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (order_id, line_no)
);

-- Large values: MySQL's binlog carries whole rows (binlog_row_image=FULL), so no placeholders here.
CREATE TABLE documents (
  doc_id CHAR(36) PRIMARY KEY,
  title TEXT NOT NULL,
  body LONGTEXT,
  `blob` LONGBLOB,
  tags JSON,
  meta JSON,
  version INT NOT NULL DEFAULT 1,
  edited_at DATETIME(6)
);
