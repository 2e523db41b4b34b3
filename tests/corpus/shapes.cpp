// Ground-truth C++ program for rea's differential suite: namespaces, classes with virtual
// methods, constructors, a template and short method names (GetPassword).

#define KEEP __attribute__((noinline, used))

namespace vault {

class Store {
public:
    KEEP Store(int seed) : seed_(seed) {}
    KEEP virtual ~Store() {}
    KEEP virtual int GetPassword(int slot) const { return seed_ * 31 + slot; }
    KEEP int Rotate(int by) { seed_ += by; return GetPassword(by); }

private:
    int seed_;
};

class LockedStore : public Store {
public:
    KEEP LockedStore(int seed) : Store(seed) {}
    KEEP int GetPassword(int slot) const override { return -slot; }
};

template <typename T> KEEP T Twice(T value) { return value + value; }

} // namespace vault

extern "C" KEEP int shapes_entry(int n) {
    vault::Store plain(n);
    vault::LockedStore locked(n + 1);
    vault::Store *stores[2] = {&plain, &locked};
    int total = 0;
    for (int i = 0; i < 2; i++)
        total += stores[i]->GetPassword(i);
    return total + plain.Rotate(2) + vault::Twice<int>(n) + (int)vault::Twice<long>(n);
}

int main(int argc, char **) { return shapes_entry(argc); }
