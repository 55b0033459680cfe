package visibility

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// continueToken is the aggregated API's metadata.continue: where the next
// page starts and which list it continues, so that a token is not taken
// for another queue's or another phase's list. Positions are counted
// afresh on every page: a unit admitted between two pages moves the rest
// up by one, so the next page may start one unit later than the last one
// read (the REST API's offset does the same).
type continueToken struct {
	List   string `json:"l"`
	Offset int    `json:"o"`
}

// errContinue is a continue token not made for the list it is sent with.
var errContinue = errors.New("the continue token is not valid for this list")

func encodeContinue(list string, offset int) string {
	data, _ := json.Marshal(continueToken{List: list, Offset: offset})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeContinue is the offset token continues list at.
func decodeContinue(token, list string) (int, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, fmt.Errorf("%w: %w", errContinue, err)
	}
	if c.List != list || c.Offset < 0 {
		return 0, errContinue
	}
	return c.Offset, nil
}
