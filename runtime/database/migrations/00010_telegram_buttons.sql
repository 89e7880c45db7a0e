-- The Approve and Reject buttons of approval requests sent to Telegram (runtime/notify
-- settings buttons.go). A button's callback data carries only an opaque token; what it
-- decides (the user's approval of one signal, through one chat's message) is kept here, so
-- a forwarded or copied message decides nothing: a press counts only from the chat the
-- message was sent to, linked to the approval's user, once, before the approval expires.

-- +goose Up
CREATE TABLE telegram_buttons (
    token      text PRIMARY KEY,
    user_id    text NOT NULL,
    signal_id  text NOT NULL,
    chat_id    bigint NOT NULL,
    message_id integer NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX telegram_buttons_expires ON telegram_buttons (expires_at);

-- +goose Down
DROP TABLE telegram_buttons;
