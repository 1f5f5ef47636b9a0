package io.hudicdc.pick;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.catalyst.util.TypeUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.collection.IndexedSeq;
import scala.collection.JavaConverters;
import scala.collection.Seq;
import scala.math.Ordering;

/**
 * Per group, for each of several slots, the slot's value at the greatest (for an "oldest" slot, the least)
 * position among the rows where the slot's condition holds.
 *
 * <p>Children: {@code position, where0, value0, where1, value1, ...}. The result is
 * {@code struct(s0, s1, ...)} of the values, each NULL when no row met its condition. Positions compare as
 * Spark orders them ascending (NULLs first); hudi-cdc's are unique per group (source order, then arrival),
 * so which of two equal positions wins is never asked. {@code max} over {@code struct(position, value)}
 * has a buffer Spark cannot update in place, so Spark sorts every row by group; this aggregate is planned
 * as an object hash aggregate. It reads rows with generated projections, and projects (and copies) a
 * value only when its row wins: a group holds a few compact rows, not a tree of objects.
 */
public final class Pick extends TypedImperativeAggregate<UnsafeRow[]> implements Serializable {
    private static final long serialVersionUID = 1L;

    private final List<Expression> children;
    private final String modes;
    private final int mutableAggBufferOffset;
    private final int inputAggBufferOffset;
    private transient Ordering<Object> ordering;
    private transient int positionFields;
    private transient UnsafeProjection where;
    private transient UnsafeProjection position;
    private transient UnsafeProjection[] values;

    public Pick(Seq<Expression> children, String modes, int mutableAggBufferOffset, int inputAggBufferOffset) {
        this.children = new ArrayList<>(JavaConverters.seqAsJavaList(children));
        if (this.children.size() != 1 + 2 * modes.length() || !modes.matches("[no]+")) {
            throw new IllegalArgumentException("Pick takes a position and a (where, value) pair per slot, "
                + "and a mode per slot ('n' newest, 'o' oldest): " + this.children.size() + " children, " + modes);
        }
        this.modes = modes;
        this.mutableAggBufferOffset = mutableAggBufferOffset;
        this.inputAggBufferOffset = inputAggBufferOffset;
    }

    /** The aggregate column over {@code inputs} (position, then a where and a value per slot); {@code modes}
     * one letter per slot: {@code n} for the greatest position, {@code o} for the least. */
    public static Column column(Seq<Column> inputs, String modes) {
        List<Expression> expressions = new ArrayList<>();
        for (Column c : JavaConverters.seqAsJavaList(inputs)) {
            expressions.add(c.expr());
        }
        Pick pick = new Pick(JavaConverters.asScalaBuffer(expressions).toSeq(), modes, 0, 0);
        return new Column(pick.toAggregateExpression());
    }

    private int slots() {
        return modes.length();
    }

    private static UnsafeProjection project(List<Expression> expressions) {
        return UnsafeProjection.create(JavaConverters.asScalaBuffer(expressions).toSeq());
    }

    /** The generated code that reads a row, made once per instance where it runs (an executor's task). */
    private void prepare() {
        if (ordering != null) {
            return;
        }
        List<Expression> wheres = new ArrayList<>();
        values = new UnsafeProjection[slots()];
        for (int i = 0; i < slots(); i++) {
            wheres.add(children.get(1 + 2 * i));
            values[i] = project(Collections.singletonList(children.get(2 + 2 * i)));
        }
        where = project(wheres);
        position = project(Collections.singletonList(children.get(0)));
        positionFields = ((StructType) children.get(0).dataType()).size();
        ordering = TypeUtils.getInterpretedOrdering(children.get(0).dataType());
    }

    /** Whether a value at {@code at} replaces slot {@code i}'s ({@code held}: where it is; NULL: none yet). */
    private boolean wins(UnsafeRow at, UnsafeRow held, int i) {
        if (held == null) {
            return true;
        }
        int c = ordering.compare(at.getStruct(0, positionFields), held.getStruct(0, positionFields));
        return modes.charAt(i) == 'o' ? c < 0 : c > 0;
    }

    /** Per slot, where its value stands and the value, each as a one-field row of its own (or NULL). */
    @Override
    public UnsafeRow[] createAggregationBuffer() {
        return new UnsafeRow[2 * slots()];
    }

    @Override
    public UnsafeRow[] update(UnsafeRow[] buffer, InternalRow input) {
        prepare();
        UnsafeRow taken = where.apply(input);
        UnsafeRow at = null;
        UnsafeRow kept = null;  // the position's own copy, shared by the slots this row wins
        for (int i = 0; i < slots(); i++) {
            if (taken.isNullAt(i) || !taken.getBoolean(i)) {
                continue;
            }
            at = at == null ? position.apply(input) : at;
            if (wins(at, buffer[2 * i], i)) {
                kept = kept == null ? at.copy() : kept;
                buffer[2 * i] = kept;
                buffer[2 * i + 1] = values[i].apply(input).copy();
            }
        }
        return buffer;
    }

    @Override
    public UnsafeRow[] merge(UnsafeRow[] buffer, UnsafeRow[] other) {
        prepare();
        for (int i = 0; i < slots(); i++) {
            if (other[2 * i] != null && wins(other[2 * i], buffer[2 * i], i)) {
                buffer[2 * i] = other[2 * i];
                buffer[2 * i + 1] = other[2 * i + 1];
            }
        }
        return buffer;
    }

    @Override
    public Object eval(UnsafeRow[] buffer) {
        Object[] picked = new Object[slots()];
        for (int i = 0; i < picked.length; i++) {
            UnsafeRow value = buffer[2 * i + 1];
            // A primitive's getter would read a NULL as 0.
            picked[i] = value == null || value.isNullAt(0) ? null : value.get(0, children.get(2 + 2 * i).dataType());
        }
        return new GenericInternalRow(picked);
    }

    /** Each row's bytes after its length; -1 for none. */
    @Override
    public byte[] serialize(UnsafeRow[] buffer) {
        int size = 0;
        for (UnsafeRow row : buffer) {
            size += 4 + (row == null ? 0 : row.getSizeInBytes());
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        for (UnsafeRow row : buffer) {
            out.putInt(row == null ? -1 : row.getSizeInBytes());
            if (row != null) {
                out.put(row.getBytes());
            }
        }
        return out.array();
    }

    @Override
    public UnsafeRow[] deserialize(byte[] bytes) {
        ByteBuffer in = ByteBuffer.wrap(bytes);
        UnsafeRow[] buffer = createAggregationBuffer();
        for (int i = 0; i < buffer.length; i++) {
            int size = in.getInt();
            if (size >= 0) {
                byte[] row = new byte[size];
                in.get(row);
                buffer[i] = new UnsafeRow(1);
                buffer[i].pointTo(row, size);
            }
        }
        return buffer;
    }

    @Override
    public DataType dataType() {
        StructField[] fields = new StructField[slots()];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = DataTypes.createStructField("s" + i, children.get(2 + 2 * i).dataType(), true);
        }
        return DataTypes.createStructType(fields);
    }

    @Override
    public boolean nullable() {
        return false;
    }

    @Override
    public Seq<Expression> children() {
        return JavaConverters.asScalaBuffer(children).toSeq();
    }

    @Override
    public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
        return new Pick(newChildren, modes, mutableAggBufferOffset, inputAggBufferOffset);
    }

    @Override
    public int mutableAggBufferOffset() {
        return mutableAggBufferOffset;
    }

    @Override
    public int inputAggBufferOffset() {
        return inputAggBufferOffset;
    }

    @Override
    public Pick withNewMutableAggBufferOffset(int offset) {
        return new Pick(children(), modes, offset, inputAggBufferOffset);
    }

    @Override
    public Pick withNewInputAggBufferOffset(int offset) {
        return new Pick(children(), modes, mutableAggBufferOffset, offset);
    }

    @Override
    public String prettyName() {
        return "hudi_cdc_pick";
    }

    @Override
    public int productArity() {
        return 4;
    }

    @Override
    public Object productElement(int n) {
        switch (n) {
            case 0: return children();
            case 1: return modes;
            case 2: return mutableAggBufferOffset;
            case 3: return inputAggBufferOffset;
            default: throw new IndexOutOfBoundsException(String.valueOf(n));
        }
    }

    @Override
    public boolean canEqual(Object other) {
        return other instanceof Pick;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof Pick)) {
            return false;
        }
        Pick that = (Pick) other;
        return children.equals(that.children) && modes.equals(that.modes)
            && mutableAggBufferOffset == that.mutableAggBufferOffset
            && inputAggBufferOffset == that.inputAggBufferOffset;
    }

    @Override
    public int hashCode() {
        return Objects.hash(children, modes, mutableAggBufferOffset, inputAggBufferOffset);
    }
}
