package watchcodec

import (
	"fmt"
	"io"

	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// Framer splits a stream of JSON objects, as an API server writes a watch,
// into one frame per object, as apimachinery's JSON framer does, by
// scanning each object's bytes for where it ends instead of parsing it: the
// frame is decoded right after, and that decode rejects what is not JSON.
// A frame that is not an object is an error.
var Framer = framer{}

type framer struct{}

// NewFrameReader implements runtime.Framer.
func (framer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &frameReader{r: r}
}

// NewFrameWriter implements runtime.Framer: objects are written as they
// are, as apimachinery's JSON framer writes them.
func (framer) NewFrameWriter(w io.Writer) io.Writer {
	return jsonserializer.Framer.NewFrameWriter(w)
}

// readSize is how much a frameReader asks its stream for at once.
const readSize = 32 << 10

// frameReader reads one JSON object per Read, in the contract of
// apimachinery's frame readers: a frame longer than the caller's buffer is
// returned over several calls, each but the last with io.ErrShortBuffer.
type frameReader struct {
	r io.ReadCloser
	// buf[start:end] is read from r and not yet returned.
	buf        []byte
	start, end int
	// rest of the frame the caller's buffer was too short for.
	rest []byte
	// err is the error r returned, kept for once buf is used up.
	err error
}

func (f *frameReader) Read(data []byte) (int, error) {
	if len(f.rest) == 0 {
		frame, err := f.next()
		if err != nil {
			return 0, err
		}
		f.rest = frame
	}
	n := copy(data, f.rest)
	f.rest = f.rest[n:]
	if len(f.rest) > 0 {
		return n, io.ErrShortBuffer
	}
	return n, nil
}

func (f *frameReader) Close() error {
	return f.r.Close()
}

// next returns the next object's bytes, valid until the following call.
// Between objects only white space may stand.
func (f *frameReader) next() ([]byte, error) {
	var (
		begun bool // the object's '{' was seen, at f.start
		value valueScanner
		i     = f.start
	)
	for {
		for ; i < f.end; i++ {
			c := f.buf[i]
			if begun {
				if value.step(c) {
					frame := f.buf[f.start : i+1]
					f.start = i + 1
					return frame, nil
				}
				continue
			}
			switch c {
			case ' ', '\t', '\n', '\r':
				f.start = i + 1
			case '{':
				begun = true
				value.step(c)
			default:
				return nil, fmt.Errorf("watch stream: want a JSON object, found %q", c)
			}
		}
		if f.err != nil {
			if f.err == io.EOF && begun {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		i -= f.start
		f.fill()
		i += f.start
	}
}

// fill moves what is unread to the front of buf, grows buf when that is
// all of it, and reads into the rest.
func (f *frameReader) fill() {
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	if len(f.buf)-f.end < readSize/2 {
		grown := make([]byte, len(f.buf)+max(readSize, len(f.buf)))
		copy(grown, f.buf[:f.end])
		f.buf = grown
	}
	n, err := f.r.Read(f.buf[f.end:])
	f.end += n
	if n == 0 && err == nil {
		return // io.Reader allows it; the caller reads again
	}
	f.err = err
}
