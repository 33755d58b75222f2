// Package queue carries notifications from the API to the per-GPU-type
// schedulers. Queue is the interface; Open picks an implementation from a
// URL: "mem://" (in-process, the default) or "amqp://..." (RabbitMQ via
// amqp091-go, with durable queues, publisher confirms, manual
// acknowledgement and reconnection). One contract suite (queuetest) runs
// against both.
//
// Delivery is at least once. A consumer that goes away before acking gives
// its messages back, and the RabbitMQ implementation publishes again when a
// connection drops before the broker confirmed a message, so a message can
// arrive twice: consumers must be idempotent (Delivery.Redelivered hints at
// a possible repeat).
//
// On RabbitMQ, the queue called name is the durable classic queue of that
// very name, published to through the default exchange. The implementation
// adds no prefix: Voda's own names carry it (SchedulerQueue gives
// "voda.scheduler.<gpu type>"), which keeps them apart from other users of
// a shared broker and lets an operator match them with one policy pattern.
package queue
