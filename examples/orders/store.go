package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Order is one order in the demo store.
type Order struct {
	ID            string   `json:"id"`
	Customer      string   `json:"customer"`
	Item          string   `json:"item"`
	TotalCents    int64    `json:"total_cents"`
	RefundedCents int64    `json:"refunded_cents"`
	Status        string   `json:"status"`
	Refunds       []Refund `json:"refunds,omitempty"`
}

// Refund is one applied refund, keyed by the tool call's idempotency key.
type Refund struct {
	IdempotencyKey string `json:"idempotency_key"`
	AmountCents    int64  `json:"amount_cents"`
	At             string `json:"at"`
}

// Store is a JSON file of orders. Every operation holds an exclusive file
// lock, so plugin processes that overlap (a relaunch) never lose a write.
type Store struct {
	path string
}

type storeFile struct {
	Orders map[string]*Order `json:"orders"`
	// Labels are return labels, by label ID: the demo's remote work, which
	// a carrier prints after a few polls.
	Labels map[string]*Label `json:"labels,omitempty"`
}

// Label is a return label the demo's carrier prints.
type Label struct {
	ID             string `json:"id"`
	OrderID        string `json:"order_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Status         string `json:"status"` // printing | ready | cancelled
	Polls          int    `json:"polls"`
	Code           string `json:"code,omitempty"`
}

// labelPollsToPrint is how many polls the demo's carrier takes to print a
// label.
const labelPollsToPrint = 2

// The store's directory, when OpenStore creates it, and its files are the
// user's alone, like the rest of the data dir.
const (
	storeDirMode  = 0o700
	storeFileMode = 0o600
)

// OpenStore opens (and seeds, when missing) the store at path.
func OpenStore(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store_path is required")
	}
	if err := os.MkdirAll(filepath.Dir(path), storeDirMode); err != nil {
		return nil, fmt.Errorf("store_path %s: %w", path, err)
	}
	s := &Store{path: path}
	err := s.update(func(f *storeFile) error { return nil })
	return s, err
}

func seed() *storeFile {
	items := []string{"", "desk lamp", "keyboard", "monitor arm", "headphones", "webcam", "standing mat", "office chair", "notebook set", "usb hub"}
	f := &storeFile{Orders: map[string]*Order{}}
	for i := 1; i <= 9; i++ {
		id := strconv.Itoa(i)
		f.Orders[id] = &Order{ID: id, Customer: "customer-" + id, Item: items[i], TotalCents: int64(1000 + 750*i), Status: "delivered"}
	}
	return f
}

// update runs fn on the file's contents under an exclusive lock and writes
// the result atomically.
func (s *Store) update(fn func(*storeFile) error) error {
	lock, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, storeFileMode)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", s.path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	f := seed()
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		f = &storeFile{}
		if err := json.Unmarshal(data, f); err != nil {
			return fmt.Errorf("store %s is not valid JSON: %w", s.path, err)
		}
		if f.Orders == nil {
			f.Orders = map[string]*Order{}
		}
	}
	if err := fn(f); err != nil {
		return err
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, out, storeFileMode); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// Get returns one order.
func (s *Store) Get(id string) (Order, error) {
	var o Order
	err := s.update(func(f *storeFile) error {
		got, ok := f.Orders[id]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoOrder, id)
		}
		o = *got
		return nil
	})
	return o, err
}

// ErrNoOrder reports an order ID the store does not have.
var ErrNoOrder = errors.New("no such order")

// Refund refunds amount (the whole remaining amount when 0) of an order. A
// repeated idempotency key returns the refund it applied before, unchanged.
func (s *Store) Refund(id string, amount int64, key string) (Order, Refund, error) {
	var o Order
	var r Refund
	err := s.update(func(f *storeFile) error {
		got, ok := f.Orders[id]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNoOrder, id)
		}
		for _, prev := range got.Refunds {
			if prev.IdempotencyKey == key {
				o, r = *got, prev
				return nil
			}
		}
		remaining := got.TotalCents - got.RefundedCents
		if amount == 0 {
			amount = remaining
		}
		if amount <= 0 || amount > remaining {
			return fmt.Errorf("cannot refund %d cents of order %s: %d cents remain refundable", amount, id, remaining)
		}
		r = Refund{IdempotencyKey: key, AmountCents: amount, At: time.Now().UTC().Format(time.RFC3339)}
		got.Refunds = append(got.Refunds, r)
		got.RefundedCents += amount
		got.Status = "refunded"
		if got.RefundedCents < got.TotalCents {
			got.Status = "partially_refunded"
		}
		o = *got
		return nil
	})
	return o, r, err
}

// RequestLabel asks the carrier for a return label of an order. A repeated
// idempotency key returns the label requested before.
func (s *Store) RequestLabel(orderID, key string) (Label, error) {
	var l Label
	err := s.update(func(f *storeFile) error {
		if _, ok := f.Orders[orderID]; !ok {
			return fmt.Errorf("%w: %s", ErrNoOrder, orderID)
		}
		for _, prev := range f.Labels {
			if prev.IdempotencyKey == key {
				l = *prev
				return nil
			}
		}
		if f.Labels == nil {
			f.Labels = map[string]*Label{}
		}
		l = Label{ID: fmt.Sprintf("label-%d", len(f.Labels)+1), OrderID: orderID, IdempotencyKey: key, Status: "printing"}
		f.Labels[l.ID] = &l
		return nil
	})
	return l, err
}

// PollLabel reads a label; each poll moves the demo's printer on.
func (s *Store) PollLabel(id string) (Label, error) {
	var l Label
	err := s.update(func(f *storeFile) error {
		got, ok := f.Labels[id]
		if !ok {
			return fmt.Errorf("no such label: %s", id)
		}
		if got.Status == "cancelled" {
			return fmt.Errorf("label %s was cancelled", id)
		}
		got.Polls++
		if got.Status == "printing" && got.Polls >= labelPollsToPrint {
			got.Status, got.Code = "ready", fmt.Sprintf("RET-%s-%04d", got.OrderID, 1000+len(got.ID)*37%9000)
		}
		l = *got
		return nil
	})
	return l, err
}

// CancelLabel stops the carrier printing a label; a label that is ready
// stays ready, and cancelling twice is harmless.
func (s *Store) CancelLabel(id string) (Label, error) {
	var l Label
	err := s.update(func(f *storeFile) error {
		got, ok := f.Labels[id]
		if !ok {
			return fmt.Errorf("no such label: %s", id)
		}
		if got.Status == "printing" {
			got.Status = "cancelled"
		}
		l = *got
		return nil
	})
	return l, err
}

// IDs lists the order IDs, sorted.
func (s *Store) IDs() ([]string, error) {
	var ids []string
	err := s.update(func(f *storeFile) error {
		for id := range f.Orders {
			ids = append(ids, id)
		}
		return nil
	})
	sort.Strings(ids)
	return ids, err
}
