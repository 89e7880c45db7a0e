-- The paper exchange's orders (runtime/exchange/paper record.go): each recorded fill's
-- order, as the exchange stores it under its client order ID. Redis keeps them for the hot
-- window only; a signal retried after that looks its orders up here before it places any,
-- so that a late retry never fills twice.

-- +goose Up
CREATE TABLE paper_orders (
    account_id      text NOT NULL,
    client_order_id text NOT NULL,
    value           text NOT NULL,
    PRIMARY KEY (account_id, client_order_id)
);

-- +goose Down
DROP TABLE paper_orders;
